"""Mistake (blind round 4, wrong_01): the filter tracks the grad mode along the graph, unknown until the first
switch, and compares it at the Linear and at the insertion point only. Lesson: "compares the grad mode at the
Linear, at the GELU and at the insertion point (the mode at the two ends alone is not enough: a GELU alone inside a
block has the ends' mode outside it)". With a closed no_grad block before the pair and the GELU alone in a block,
it fuses, and the frozen GELU's Linear gets gradients."""
from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)
PLACES = ("linear", "insertion")


def _same_mode_at_linear_insertion(match, graph, pattern):
    """The grad mode tracked along the graph, "entry" (unknown) until the first _set_grad_enabled, compared at
    linear and insertion only."""
    matched = [n for n in graph.nodes if n in set(match.nodes_map.values()) - set(match.placeholder_nodes)]
    readers = {user for node in match.returning_nodes for user in node.users}
    where = {"linear": matched[0], "gelu": matched[-1]}
    mode, seen = "entry", {}
    for node in graph.nodes:
        if "insertion" not in seen and node in readers:
            seen["insertion"] = mode
        for place, at in where.items():
            if node is at:
                seen[place] = mode
        if node.target in _ref.GRAD_MODE_SWITCHES:
            mode = bool(node.args[0])
    seen.setdefault("insertion", mode)
    return len({seen[place] for place in PLACES}) == 1


_ref.FILTERS = [_same_mode_at_linear_insertion, _ref.no_in_place_write]
