"""Mistake (blind round 1): the backward op's fake kernel spells its sizes out as ints ("a gradient has its input's
concrete shape"). Only the forward op goes through export; but aot_autograd traces the backward with symbolic sizes
whenever a model trains with a dynamic batch, and the int() fixes the batch: Dynamo compiles once per batch size."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('fake_kernel_keeps_sizes_symbolic', 'training_handles_a_new_batch_size')


@torch.library.custom_op("npu_mutant_bwd_ints::linear_gelu_backward", mutates_args=())
def linear_gelu_backward(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                         approximate: str = "none") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _ref.linear_gelu_backward(grad, x, weight, bias, approximate)


@linear_gelu_backward.register_fake
def _fake(grad, x, weight, bias, approximate="none"):
    return (x.new_empty([int(s) for s in x.shape]), weight.new_empty([int(s) for s in weight.shape]),
            weight.new_empty([int(weight.shape[0])]))


def _backward(ctx, grad):
    x, weight, bias = ctx.saved_tensors
    grad_x, grad_weight, grad_bias = linear_gelu_backward(grad, x, weight, bias, ctx.approximate)
    return grad_x, grad_weight, grad_bias if ctx.has_bias else None, None


_ref.linear_gelu.register_autograd(_backward, setup_context=_ref._setup_context)
