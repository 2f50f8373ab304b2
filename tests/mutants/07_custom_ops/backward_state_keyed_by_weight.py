"""Mistake (blind round 3, wrong_state_by_weight): setup_context keeps approximate and has-bias in a module table
keyed by id(weight), not on ctx ("one entry per layer"). Two calls sharing one weight (tied or reused layers) before
one backward share one entry: the first call's backward reads the second call's approximate and bias. Lesson: "Keep
each call's state on ctx"."""
from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('backward_keeps_each_calls_state',)

_STATE = {}


def _setup_context(ctx, inputs, output):
    x, weight, bias, approximate = inputs
    ctx.save_for_backward(x, weight, bias)
    _STATE[id(weight)] = (approximate, bias is not None)


def _backward(ctx, grad):
    x, weight, bias = ctx.saved_tensors
    approximate, has_bias = _STATE[id(weight)]
    grad_x, grad_weight, grad_bias = _ref.linear_gelu_backward(grad, x, weight, bias, approximate)
    return grad_x, grad_weight, grad_bias if has_bias else None, None


_ref.linear_gelu.register_autograd(_backward, setup_context=_setup_context)
