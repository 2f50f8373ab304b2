"""Mistake: fuse_with_rewriter returns how many patterns it tried, not how many pairs it fused."""
from torch.fx.subgraph_rewriter import replace_pattern_with_filters

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_fuses_every_form_dynamo_writes', 'rewriter_fuses_exactly_the_safe_pairs',
    'rewriter_leaves_shared_linear_outputs', 'rewriter_moves_no_pair_past_a_switch_or_write',
    'rewriter_respects_no_grad_blocks')


def fuse_with_rewriter(gm):
    for p, r in _ref.REWRITES:
        replace_pattern_with_filters(gm, p, r, match_filters=[_ref.no_grad_mode_switch])
    gm.recompile()
    return len(_ref.REWRITES)


_ref.fuse_with_rewriter = fuse_with_rewriter
