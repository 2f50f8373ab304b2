"""Mistake (blind round 1): setup_context keeps approximate and has-bias in module globals, not on ctx ("ctx is for
tensors"). With two calls before one backward (two layers), the first call's backward reads the second call's."""
import torch

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('backward_keeps_each_calls_state', 'training_handles_a_new_batch_size',
    'training_runs_fused_forward_and_backward')

_STATE = {"approximate": "none", "has_bias": True}


def _setup_context(ctx, inputs, output):
    x, weight, bias, approximate = inputs
    ctx.save_for_backward(x, weight, bias)
    _STATE.update(approximate=approximate, has_bias=bias is not None)


def _backward(ctx, grad):
    x, weight, bias = ctx.saved_tensors
    grad_x, grad_weight, grad_bias = _ref.linear_gelu_backward(grad, x, weight, bias, _STATE["approximate"])
    return grad_x, grad_weight, grad_bias if _STATE["has_bias"] else None, None


_ref.linear_gelu.register_autograd(_backward, setup_context=_setup_context)
