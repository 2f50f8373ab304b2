"""Mistake: no single-user guard, and every reader of the Linear is rewired to the fused node.

Every Linear -> GELU pair is fused, and so that the Linear can be erased, its other readers (a residual add,
the graph's output) are pointed at the fused node too. They now receive GELU(z) instead of z: the model
computes something else.
"""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = (
    "linear_output_with_two_users_is_not_fused",
    "random_mlps_as_aten_graphs",
    "random_mlps_as_decomposed_graphs",
    "random_mlps_as_module_graphs",
    "random_mlps_as_torch_graphs",
    "report_after_a_pass_leaves_out_the_fused_pairs",
    "report_gives_each_gelu_its_reason",
    "reshaped_product_with_two_users_is_not_fused",
)


def feeds_only(node, user):
    return True  # the missing guard


def rewrite(gm, match):
    graph = gm.graph
    operands = _ref.linear_operands(gm, match.linear)
    with graph.inserting_before(match.reshape or match.gelu):
        weight, bias = _ref.as_value(graph, operands.weight), _ref.as_value(graph, operands.bias)
        fused = graph.call_function(_ref.LINEAR_GELU, (operands.x, weight, bias), {"approximate": match.approximate})
    fused.meta.update({k: v for k, v in match.linear.meta.items() if k in ("val", "example_value")})
    if match.reshape is not None:
        match.reshape.replace_input_with(match.linear, fused)
        match.gelu.replace_all_uses_with(match.reshape)
    else:
        match.gelu.replace_all_uses_with(fused)
    graph.erase_node(match.gelu)
    match.linear.replace_all_uses_with(fused)  # "nothing may read the Linear any more" -- the residual included
    inputs = match.linear.all_input_nodes
    graph.erase_node(match.linear)
    for node in inputs:
        _ref.erase_if_dead(graph, node)
    return fused


_ref.feeds_only = feeds_only
_ref.rewrite = rewrite
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
