"""Mistake: one pattern with ignore_literals=True, so that it matches every GELU form; the replacement then fuses
the tanh GELU into linear_gelu(..., 'none'), because a literal the matcher ignored is not carried over."""
from torch.fx.subgraph_rewriter import replace_pattern_with_filters

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_fuses_every_form_dynamo_writes', 'rewriter_moves_no_pair_past_a_switch_or_write',
    'training_handles_a_new_batch_size', 'training_runs_fused_forward_and_backward')


def fuse_with_rewriter(gm):
    fused = 0
    for pattern in (_ref._pattern_plain, _ref._pattern_none):
        fused += len(replace_pattern_with_filters(gm, pattern, _ref._fused_none, ignore_literals=True,
                                                  match_filters=[_ref.no_grad_mode_switch]))
    gm.recompile()
    return fused


_ref.fuse_with_rewriter = fuse_with_rewriter
