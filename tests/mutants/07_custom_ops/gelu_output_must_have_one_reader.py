"""Mistake: kata 3's guard applied to the wrong node: the filter refuses a pair whose GELU output has more than one
reader, though only the Linear's output disappears in the fused op."""
from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_fuses_every_form_dynamo_writes', 'rewriter_moves_no_pair_past_a_switch_or_write')


def _gelu_read_once(match, graph, pattern):
    read_once = all(len(node.users) == 1 for node in match.returning_nodes)
    return read_once and _ref.no_grad_mode_switch(match, graph, pattern)


def fuse_with_rewriter(gm):
    from torch.fx.subgraph_rewriter import replace_pattern_with_filters

    fused = sum(len(replace_pattern_with_filters(gm, p, r, match_filters=[_gelu_read_once])) for p, r in _ref.REWRITES)
    gm.recompile()
    return fused


_ref.fuse_with_rewriter = fuse_with_rewriter
