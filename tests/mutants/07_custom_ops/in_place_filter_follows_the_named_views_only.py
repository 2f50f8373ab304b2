"""Mistake (blind round 6, w08_views_named_four): the in-place filter follows only the views the lesson names
(getitem, the methods view and t, the function torch.transpose), so a write through t.permute(...), t.unsqueeze(0),
w.T or torch.narrow(b, ...) goes unseen. Lesson: "a write counts when it goes into anything that shares memory with
an input"."""
from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)

_ref.VIEW_METHODS = {"view", "t", "transpose"}
_ref.VIEW_ATTRIBUTES = set()
