"""Mistake: NPUOperatorSupport memoizes its answers by node.name (names are unique within one graph, and the
partitioner asks about a node several times). Asked about a second graph, a node of the same name (`act`, Dynamo's
`h`, `mul`) gets the first graph's answer. Breaks "is_node_supported depends on the node's op only: ... not on any
graph asked about before (one answer per node, whatever order the graphs come in)" and "no answers memoized by
node.name or node.target" (README.md, 'The contract'; blind round 4, wrong_support_cache_by_name)."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")


class NPUOperatorSupport(_ref.NPUOperatorSupport):
    def is_node_supported(self, submodules, node):
        answers = self.__dict__.setdefault("_answers", {})
        if node.name not in answers:  # the wrong rule: a name stands for its node in every graph
            answers[node.name] = super().is_node_supported(submodules, node)
        return answers[node.name]


_ref.NPUOperatorSupport = NPUOperatorSupport  # classify makes one per call, as the attempt did

KILLED_BY = ("generated_programs_agree_with_reference", "modules_resolve_by_type_not_attribute_name",
             "one_support_answers_each_node_as_it_is_now", "size_arithmetic_is_no_npu_op")

canonical_op, classify = _ref.canonical_op, _ref.classify
