"""Mistake: the graph is rewritten but gm.recompile() is never called.

gm.graph holds the fused nodes, so every structural look at the graph is right. But calling gm runs
gm.forward, Python code generated from the graph when it was last compiled: the old, unfused code. The
outputs match eager and the fused kernel never runs.
"""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

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
    "linear_output_with_two_users_is_not_fused",
    "linear_subclass_fuses_only_with_linear_forward",
    "linear_without_bias_fuses",
    "module_fused_node_reads_the_linear_parameters",
    "module_graphs_fuse",
    "module_linear_then_functional_gelu",
    "no_state_between_calls",
    "nodes_outside_matches_untouched",
    "pre_dispatch_graphs_fuse",
    "random_mlps_as_aten_graphs",
    "random_mlps_as_decomposed_graphs",
    "random_mlps_as_module_graphs",
    "random_mlps_as_torch_graphs",
    "random_pair_programs",
    "reshape_that_regroups_or_no_input_view_keeps_its_shape",
    "reshaped_product_with_two_users_is_not_fused",
    "second_call_fuses_nothing",
    "shared_linear_module_keeps_working",
    "symbolic_batch_view_sandwich_fuses",
    "unrelated_nodes_between_linear_and_gelu",
    "view_sandwich_fuses",
)


def fuse_linear_gelu(gm):
    matches = [match for node in gm.graph.nodes if (match := _ref.match_at(gm, node)) is not None]
    for match in matches:
        _ref.rewrite(gm, match)
    gm.graph.lint()
    return len(matches)


unfused_pairs = _ref.unfused_pairs
