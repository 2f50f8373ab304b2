"""Mistake: the replacement calls linear_gelu(x, w, None): one pattern placeholder fewer to think about, and every
bias silently lost."""
from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_fuses_every_form_dynamo_writes', 'rewriter_fuses_exactly_the_safe_pairs',
    'rewriter_moves_no_pair_past_a_switch_or_write', 'rewriter_respects_no_grad_blocks',
    'training_handles_a_new_batch_size', 'training_matches_eager', 'training_runs_fused_forward_and_backward')


def _fused_none(x, w, b):
    return _ref.linear_gelu(x, w, None, "none")


def _fused_tanh(x, w, b):
    return _ref.linear_gelu(x, w, None, "tanh")


_ref.REWRITES = ((_ref._pattern_plain, _fused_none), (_ref._pattern_none, _fused_none),
                 (_ref._pattern_tanh, _fused_tanh))
