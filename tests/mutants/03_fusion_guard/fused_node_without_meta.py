"""Mistake: the fused node is created without the replaced node's meta. The graph computes the right numbers,
but the fused node carries no recorded value (meta["val"], Dynamo's meta["example_value"]), so any pass that
runs after this one -- shape propagation, a partitioner, the matcher on the next pair -- cannot read its shape."""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = (
    "addmm_and_mm_fuse",
    "approximate_is_carried",
    "dead_nodes_are_removed",
    "dynamo_graphs_fuse",
    "export_graphs_fuse",
    "fused_nodes_record_their_value",
    "gelu_read_twice_still_fuses",
    "linear_output_with_two_users_is_not_fused",
    "linear_without_bias_fuses",
    "no_state_between_calls",
    "nodes_outside_matches_untouched",
    "pre_dispatch_graphs_fuse",
    "random_mlps_as_aten_graphs",
    "random_mlps_as_decomposed_graphs",
    "random_mlps_as_torch_graphs",
    "random_pair_programs",
    "reshape_that_regroups_or_no_input_view_keeps_its_shape",
    "reshaped_product_with_two_users_is_not_fused",
    "second_call_fuses_nothing",
    "shared_linear_module_keeps_working",
    "unrelated_nodes_between_linear_and_gelu",
    "view_sandwich_fuses",
)


def rewrite(gm, match):
    """The reference's rewrite, without copying the Linear's meta onto the fused node."""
    graph = gm.graph
    operands = _ref.linear_operands(gm, match.linear)
    anchor = match.reshape or match.gelu
    with graph.inserting_before(anchor):
        weight, bias = _ref.as_value(graph, operands.weight), _ref.as_value(graph, operands.bias)
        fused = graph.call_function(_ref.LINEAR_GELU, (operands.x, weight, bias), {"approximate": match.approximate})
    if match.reshape is not None:
        match.reshape.replace_input_with(match.linear, fused)
        match.gelu.replace_all_uses_with(match.reshape)
    else:
        match.gelu.replace_all_uses_with(fused)
    graph.erase_node(match.gelu)
    inputs = match.linear.all_input_nodes
    graph.erase_node(match.linear)
    for node in inputs:
        _ref.erase_if_dead(graph, node)
    return fused

_ref.rewrite = rewrite
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
