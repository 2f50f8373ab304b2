"""Mistake: is_node_supported keeps torch's OperatorSupport default and says True for every node that is
not a call: placeholder, get_attr and output. CapabilityBasedPartitioner(..., allows_single_node_partition=
True) then pulls the graph's inputs and its output into the NPU partition."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
canonical_op, classify = _ref.canonical_op, _ref.classify

KILLED_BY = ("structural_nodes_are_never_supported", "partitions_match_reference_on_zoo")


class NPUOperatorSupport(_ref.NPUOperatorSupport):
    def is_node_supported(self, submodules, node):
        if node.op not in ("call_module", "call_function", "call_method"):
            return True  # what torch.fx.passes.operator_support.OperatorSupport does
        return super().is_node_supported(submodules, node)
