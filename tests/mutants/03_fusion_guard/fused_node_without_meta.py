"""Mistake: the fused node is created without the replaced node's meta. The graph computes the right numbers,
but the fused node carries no recorded value (meta["val"], Dynamo's meta["example_value"]), so any pass that
runs after this one -- shape propagation, a partitioner, the matcher on the next pair -- cannot read its shape."""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = ("fused_nodes_record_their_value",)


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
