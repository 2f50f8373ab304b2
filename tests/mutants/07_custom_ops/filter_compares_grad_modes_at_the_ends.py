"""Mistake (blind round 1, its correct_gradstate.py): the filter accepts a pair when the grad mode at the match's
first node equals the mode where the replacement goes, ignoring the GELU's own mode. With the Linear and the reader
outside a no_grad block and the GELU alone inside it, the fused op runs with grad on: the frozen GELU's Linear gets
gradients eager never gives it."""
import torch

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)


def _same_mode_at_both_ends(match, graph, pattern):
    matched = {n for n in match.nodes_map.values() if n not in match.placeholder_nodes}
    readers = {user for node in match.returning_nodes for user in node.users}
    mode, mode_at_start = True, None
    for node in graph.nodes:
        if mode_at_start is None and node in matched:
            mode_at_start = mode
        if mode_at_start is not None and node in readers:
            return mode == mode_at_start
        if node.target in _ref.GRAD_MODE_SWITCHES:
            mode = bool(node.args[0])
    return True


def fuse_with_rewriter(gm):
    from torch.fx.subgraph_rewriter import replace_pattern_with_filters

    fused = sum(len(replace_pattern_with_filters(gm, p, r, match_filters=[_same_mode_at_both_ends,
                                                                          _ref.no_in_place_write]))
                for p, r in _ref.REWRITES)
    gm.recompile()
    return fused


_ref.fuse_with_rewriter = fuse_with_rewriter
