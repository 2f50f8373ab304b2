"""Mistake: the Linear's output may have several readers as long as each is a GELU; each GELU gets its own fused
node, and the Linear goes with the last one. The numbers stay right, but the product is computed once per fused
node. The lesson: "a pair is safe to fuse only if the GELU is the only reader of the Linear's output"; "A second GELU
of `z` is a reader like any other: fusing each GELU of one Linear computes the product once per fused node" (blind
round k03-r4, wrong_guard_other_gelus_ok)."""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_rewrite = _ref.rewrite

KILLED_BY = (
    "linear_output_with_two_users_is_not_fused",
    "report_after_a_pass_leaves_out_the_fused_pairs",
    "report_gives_each_gelu_its_reason",
)


def feeds_only(node, user):
    if list(node.users) == [user]:
        return True
    gm = node.graph.owning_module
    return all(_ref.gelu_approximate(gm, reader) is not None for reader in node.users) and user in node.users


def rewrite(gm, match):
    if match.reshape is not None:
        return _right_rewrite(gm, match)
    graph = gm.graph
    operands = _ref.linear_operands(gm, match.linear)
    with graph.inserting_before(match.gelu):
        weight, bias = _ref.as_value(graph, operands.weight), _ref.as_value(graph, operands.bias)
        fused = graph.call_function(_ref.LINEAR_GELU, (operands.x, weight, bias), {"approximate": match.approximate})
    fused.meta.update({k: v for k, v in match.linear.meta.items() if k in ("val", "example_value")})
    match.gelu.replace_all_uses_with(fused)
    graph.erase_node(match.gelu)
    if not match.linear.users:  # the last GELU of this Linear
        inputs = match.linear.all_input_nodes
        graph.erase_node(match.linear)
        for node in inputs:
            _ref.erase_if_dead(graph, node)
    return fused


_ref.feeds_only = feeds_only
_ref.rewrite = rewrite
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
