"""Mistake (blind round 2, wrong_inplace_no_alias): the in-place filter looks for writes whose first argument is
the pair's input node itself, not a view of it. `t[0].mul_(0.5)` or `t.view(-1).add_(1.0)` between the pair and
the GELU's first reader writes into t's memory all the same: the fused op, put after it, reads the written t."""
from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)

_ref._views_of = lambda inputs, graph: set(inputs)
