"""Mistake (blind round 3, torch contradicting the old lesson): "a write after the GELU's first reader changes
nothing", also when autograd records the pair. It changes no value, but the fused op saves x, weight and bias for
its backward, and eager's Linear + GELU saved less (never the bias; x only when the weight requires grad; the weight
only when x does): fused, `b.add_(1)` after the first reader turns a working training step into "modified by an
inplace operation". Lesson: when autograd records a pair, refuse it if any later node writes into one of its
inputs."""
from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)

_ref._recorded_by_autograd = lambda match: False
