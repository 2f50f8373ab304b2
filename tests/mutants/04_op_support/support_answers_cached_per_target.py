"""Mistake: NPUOperatorSupport memoizes its answers per call_function target (a callable is the same object in
every graph, so it "always computes the same op"). Within one graph, operator.mul on sizes answered first makes a
later operator.mul on tensors unsupported, and the other way round. Breaks "is_node_supported depends on the node's
op only" and "no answers memoized by node.name or node.target" (README.md, 'The contract'; blind round 5,
wrong_memo_by_target)."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")


class NPUOperatorSupport(_ref.NPUOperatorSupport):
    def is_node_supported(self, submodules, node):
        if node.op != "call_function":
            return super().is_node_supported(submodules, node)
        answers = self.__dict__.setdefault("_by_target", {})
        try:
            if node.target not in answers:  # the wrong rule: one answer per callable
                answers[node.target] = super().is_node_supported(submodules, node)
            return answers[node.target]
        except TypeError:  # an unhashable target
            return super().is_node_supported(submodules, node)


_ref.NPUOperatorSupport = NPUOperatorSupport  # classify makes one per call, as the attempt did

KILLED_BY = ("size_arithmetic_is_no_npu_op",)

canonical_op, classify = _ref.canonical_op, _ref.classify
