"""Mistake (blind round 6, w11_entry_mode_true): the grad-mode filter compares the mode at the Linear, the GELU and
the insertion point, as the lesson says, but takes the mode before the graph's first switch to be "on". A model called
under torch.no_grad() starts with grad off and Dynamo writes no switch for it: with the Linear there and the GELU and
its reader in an enable_grad block, the first switch sets True, the filter sees True at all three nodes, and the
fused op sends gradients into a Linear eager never trains. Lesson: "Compare all three whatever the blocks look like";
Dynamo "writes only the switches ... where the mode changes"."""
import torch

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)


def _same_mode_at_three_nodes(match, graph, pattern):
    linear = match.nodes_map[next(n for n in pattern.nodes if n.op == "call_function" and
                                  n.target is torch._C._nn.linear)]
    gelu = match.returning_nodes[0]
    readers = {user for node in match.returning_nodes for user in node.users}
    mode, seen = True, {}
    for node in graph.nodes:
        if node is linear:
            seen["linear"] = mode
        if node is gelu:
            seen["gelu"] = mode
        if node in readers:
            seen["reader"] = mode
            break
        if node.target in _ref.GRAD_MODE_SWITCHES:
            mode = bool(node.args[0])
    return len(set(seen.values())) == 1


def fuse_with_rewriter(gm):
    from torch.fx.subgraph_rewriter import replace_pattern_with_filters

    fused = sum(len(replace_pattern_with_filters(gm, p, r, match_filters=[_same_mode_at_three_nodes,
                                                                          _ref.no_in_place_write]))
                for p, r in _ref.REWRITES)
    gm.recompile()
    return fused


_ref.fuse_with_rewriter = fuse_with_rewriter
