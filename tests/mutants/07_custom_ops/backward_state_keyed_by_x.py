"""Mistake (blind round 6, w02_state_keyed_by_x): setup_context keeps approximate and has-bias in a module table
keyed by x's memory (its data pointer), not on ctx. Two calls on one x before one backward (two heads reading one
activation) share one entry: the first call's backward reads the second call's approximate and bias. Lesson: "Keep
each call's state on ctx"."""
from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('backward_keeps_each_calls_state', 'fake_kernel_keeps_sizes_symbolic', 'opcheck_passes_on_forward_op',
             'training_handles_a_new_batch_size', 'training_matches_eager',
             'training_runs_fused_forward_and_backward')

_STATE = {}


def _setup_context(ctx, inputs, output):
    x, weight, bias, approximate = inputs
    ctx.save_for_backward(x, weight, bias)
    _STATE[x.data_ptr()] = (approximate, bias is not None)


def _backward(ctx, grad):
    x, weight, bias = ctx.saved_tensors
    approximate, has_bias = _STATE[x.data_ptr()]
    grad_x, grad_weight, grad_bias = _ref.linear_gelu_backward(grad, x, weight, bias, approximate)
    return grad_x, grad_weight, grad_bias if has_bias else None, None


_ref.linear_gelu.register_autograd(_backward, setup_context=_setup_context)
