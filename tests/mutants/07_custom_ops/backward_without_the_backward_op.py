"""Mistake: the backward computes the gradients with aten ops inline instead of calling the vendor's backward
kernel, linear_gelu_backward: the numbers are right, the backward graph never runs the fused backward."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('backward_runs_the_backward_op', 'training_handles_a_new_batch_size', 'training_matches_eager',
    'training_runs_fused_forward_and_backward')


def _backward(ctx, grad):
    x, weight, bias = ctx.saved_tensors
    grad_pre = torch.ops.aten.gelu_backward(grad, F.linear(x, weight, bias), approximate=ctx.approximate)
    rows = grad_pre.reshape(-1, grad_pre.shape[-1])
    return grad_pre @ weight, rows.t() @ x.reshape(-1, x.shape[-1]), rows.sum(0) if ctx.has_bias else None, None


_ref.linear_gelu.register_autograd(_backward, setup_context=_ref._setup_context)
