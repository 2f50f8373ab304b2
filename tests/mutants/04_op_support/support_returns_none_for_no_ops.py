"""Mistake: is_node_supported returns None, not False, for nodes that are no op (a call node canonical_op names
None, and every placeholder, get_attr and output): the partitioner only tests the answer's truth, so None looks as
good as False. Breaks "is_node_supported returns True or False (a bool, as its signature says), never None or another
merely falsy value" (README.md, 'The contract'; blind round 6, w15_falsy_not_false)."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")


class NPUOperatorSupport(_ref.NPUOperatorSupport):
    def is_node_supported(self, submodules, node):
        if node.op not in _ref.CALL_OPS or _ref.canonical_op(node, submodules) is None:
            return None  # the wrong rule: "no op" needs no answer
        return super().is_node_supported(submodules, node)


_ref.NPUOperatorSupport = NPUOperatorSupport

KILLED_BY = ("one_support_answers_each_node_as_it_is_now",)

canonical_op, classify = _ref.canonical_op, _ref.classify
