"""Mistake: the graph is rewritten but gm.recompile() is never called.

gm.graph holds the fused nodes, so every structural look at the graph is right. But calling gm runs
gm.forward, Python code generated from the graph when it was last compiled: the old, unfused code. The
outputs match eager and the fused kernel never runs.
"""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = (
    "module_graphs_fuse", "module_linear_then_functional_gelu", "module_fused_node_reads_the_linear_parameters",
    "random_mlps_as_module_graphs", "dynamo_graphs_fuse", "functional_symbolic_trace_fuses",
    "random_mlps_as_torch_graphs", "export_graphs_fuse", "pre_dispatch_graphs_fuse", "random_mlps_as_aten_graphs",
    "addmm_and_mm_fuse", "view_sandwich_fuses", "reshaped_product_with_two_users_is_not_fused",
    "random_mlps_as_decomposed_graphs", "linear_output_with_two_users_is_not_fused", "gelu_read_twice_still_fuses",
    "approximate_is_carried", "linear_without_bias_fuses", "second_call_fuses_nothing",
    "nodes_outside_matches_untouched", "dead_nodes_are_removed", "shared_linear_module_keeps_working",
    "linear_subclass_fuses_only_with_linear_forward", "fused_nodes_record_their_value",
             "symbolic_batch_view_sandwich_fuses", "reshape_that_regroups_or_no_input_view_keeps_its_shape", "gelu_subclass_fuses_only_with_gelu_forward", "random_pair_programs")


def fuse_linear_gelu(gm):
    matches = [match for node in gm.graph.nodes if (match := _ref.match_at(gm, node)) is not None]
    for match in matches:
        _ref.rewrite(gm, match)
    gm.graph.lint()
    return len(matches)
