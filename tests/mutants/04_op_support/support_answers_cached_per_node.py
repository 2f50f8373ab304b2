"""Mistake: NPUOperatorSupport memoizes its answers with the Node itself as the key: a node is asked about several
times by the partitioner, and a Node object cannot be mistaken for another one. But nodes are mutable: after a pass
sets node.target (or swaps the submodule it calls) the cache answers for the op the node had. Breaks "nodes are
mutable (a pass may set node.target or swap a submodule in place), so an answer kept under the Node itself outlives
the op it was about" (README.md, 'The contract'; blind round 6, w13_node_memo)."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")


class NPUOperatorSupport(_ref.NPUOperatorSupport):
    def is_node_supported(self, submodules, node):
        answers = self.__dict__.setdefault("_answers", {})
        if node not in answers:  # the wrong rule: a node keeps its op for ever
            answers[node] = super().is_node_supported(submodules, node)
        return answers[node]


_ref.NPUOperatorSupport = NPUOperatorSupport  # classify makes one per call, as the attempt did

KILLED_BY = ("one_support_answers_each_node_as_it_is_now",)

canonical_op, classify = _ref.canonical_op, _ref.classify
