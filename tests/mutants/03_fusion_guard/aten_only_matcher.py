"""Mistake: the matcher knows only aten ops, so MODULE and TORCH graphs silently fuse nothing.

Written and tested on make_fx / export graphs, the pass looks for aten.linear / aten.addmm / aten.mm and
aten.gelu. A symbolic_trace graph has call_module nodes and a Dynamo graph torch._C._nn.linear: no match, no
error, no fusion, and every output still matches eager.
"""
import torch

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_linear_operands = _ref.linear_operands

KILLED_BY = (
    "approximate_is_carried",
    "dead_nodes_are_removed",
    "dynamo_graphs_fuse",
    "functional_symbolic_trace_fuses",
    "fused_nodes_record_their_value",
    "gelu_read_twice_still_fuses",
    "gelu_subclass_fuses_only_with_gelu_forward",
    "linear_output_with_two_users_is_not_fused",
    "linear_subclass_fuses_only_with_linear_forward",
    "linear_without_bias_fuses",
    "module_fused_node_reads_the_linear_parameters",
    "module_graphs_fuse",
    "module_linear_then_functional_gelu",
    "no_state_between_calls",
    "nodes_outside_matches_untouched",
    "random_mlps_as_module_graphs",
    "random_mlps_as_torch_graphs",
    "random_pair_programs",
    "report_after_a_pass_leaves_out_the_fused_pairs",
    "report_gives_each_gelu_its_reason",
    "second_call_fuses_nothing",
    "shared_linear_module_keeps_working",
    "symbolic_batch_view_sandwich_fuses",
    "unrelated_nodes_between_linear_and_gelu",
)


def gelu_approximate(gm, node):
    if node.op == "call_function" and node.target == torch.ops.aten.gelu.default:
        return node.kwargs.get("approximate", "none")
    return None


def linear_operands(gm, node):
    if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
        return _right_linear_operands(gm, node)
    return None


_ref.gelu_approximate = gelu_approximate
_ref.linear_operands = linear_operands
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
