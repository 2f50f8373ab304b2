"""Mistake: GELU's `approximate` is not carried to the fused node.

The fused node is created as LINEAR_GELU(x, w, b), so it always computes the exact GELU. A model with
nn.GELU(approximate="tanh") now computes slightly different numbers (up to ~1e-3).
"""
import dataclasses

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_match_at = _ref.match_at

KILLED_BY = (
    "addmm_and_mm_fuse",
    "approximate_is_carried",
    "dead_nodes_are_removed",
    "dynamo_graphs_fuse",
    "export_graphs_fuse",
    "functional_symbolic_trace_fuses",
    "fused_nodes_record_their_value",
    "gelu_read_twice_still_fuses",
    "gelu_subclass_fuses_only_with_gelu_forward",
    "linear_without_bias_fuses",
    "module_fused_node_reads_the_linear_parameters",
    "module_graphs_fuse",
    "module_linear_then_functional_gelu",
    "pre_dispatch_graphs_fuse",
    "random_mlps_as_aten_graphs",
    "random_mlps_as_decomposed_graphs",
    "random_mlps_as_module_graphs",
    "random_mlps_as_torch_graphs",
    "random_pair_programs",
    "reshape_that_regroups_or_no_input_view_keeps_its_shape",
    "second_call_fuses_nothing",
    "symbolic_batch_view_sandwich_fuses",
    "unrelated_nodes_between_linear_and_gelu",
    "view_sandwich_fuses",
)


def match_at(gm, node):
    match = _right_match_at(gm, node)
    return None if match is None else dataclasses.replace(match, approximate="none")


_ref.match_at = match_at
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
