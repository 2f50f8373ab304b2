"""Mistake: NPUOperatorSupport memoizes its answers by id(node): unlike node.name, an id is unique to one node
while it lives. Once a graph is freed, CPython gives its nodes' ids to the next graph's nodes, and the cache answers
for a node that is gone. Breaks "Not by the node either: once a graph is freed, CPython gives its nodes' ids (their
memory) to the next graph's nodes, so an answer kept under id(node) answers for a node that is gone" (README.md,
'The contract'; blind round 6, w07_id_memo)."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")


class NPUOperatorSupport(_ref.NPUOperatorSupport):
    def is_node_supported(self, submodules, node):
        answers = self.__dict__.setdefault("_answers", {})
        if id(node) not in answers:  # the wrong rule: an id stands for its node for ever
            answers[id(node)] = super().is_node_supported(submodules, node)
        return answers[id(node)]


_ref.NPUOperatorSupport = NPUOperatorSupport  # classify makes one per call, as the attempt did

KILLED_BY = ("one_support_answers_each_node_as_it_is_now",)

canonical_op, classify = _ref.canonical_op, _ref.classify
