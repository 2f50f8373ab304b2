"""Mistake: no single-user guard, and the Linear is kept alive for its other readers.

Every Linear -> GELU pair is fused. When the Linear's output is also read elsewhere (a residual add, a graph
output), the pass leaves the Linear in place for that reader and adds a fused node beside it. The numbers
stay right -- but the Linear now runs twice, once on its own and once inside the fused op.
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
    with graph.inserting_before(match.gelu):
        weight, bias = _ref.as_value(graph, operands.weight), _ref.as_value(graph, operands.bias)
        fused = graph.call_function(_ref.LINEAR_GELU, (operands.x, weight, bias), {"approximate": match.approximate})
        fused.meta.update({k: v for k, v in match.linear.meta.items() if k in ("val", "example_value")})
        if match.reshape is not None:
            fused = graph.call_function(match.reshape.target, (fused, *match.reshape.args[1:]))
            fused.meta.update({k: v for k, v in match.reshape.meta.items() if k in ("val", "example_value")})
    match.gelu.replace_all_uses_with(fused)
    graph.erase_node(match.gelu)
    _erase_if_unused(graph, match.reshape or match.linear)  # still read by the residual? then it stays
    return fused


def _erase_if_unused(graph, node):
    if node.users or node.op not in ("call_function", "call_module", "get_attr"):
        return
    inputs = node.all_input_nodes
    graph.erase_node(node)
    for input_node in inputs:
        _erase_if_unused(graph, input_node)


_ref.feeds_only = feeds_only
_ref.rewrite = rewrite
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
