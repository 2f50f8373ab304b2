"""Mistake: no filter: the matcher's single-user guard is taken for the whole safety argument, and a pair beside a
no_grad block is fused where the rewriter puts the replacement, past Dynamo's _set_grad_enabled(True)."""
from torch.fx.subgraph_rewriter import replace_pattern

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write', 'rewriter_respects_no_grad_blocks',
    'training_respects_no_grad_blocks')


def fuse_with_rewriter(gm):
    fused = sum(len(replace_pattern(gm, pattern, replacement)) for pattern, replacement in _ref.REWRITES)
    gm.recompile()
    return fused


_ref.fuse_with_rewriter = fuse_with_rewriter
