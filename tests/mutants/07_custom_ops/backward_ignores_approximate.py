"""Mistake: the backward kernel differentiates the exact GELU even when the forward used approximate='tanh'."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('backward_keeps_each_calls_state', 'gradients_match_eager', 'rewriter_fuses_every_form_dynamo_writes',
    'training_handles_a_new_batch_size', 'training_runs_fused_forward_and_backward')


@torch.library.custom_op("npu_mutant_bwd_tanh::linear_gelu_backward", mutates_args=())
def linear_gelu_backward(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                         approximate: str = "none") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    grad_pre = torch.ops.aten.gelu_backward(grad, F.linear(x, weight, bias))
    rows = grad_pre.reshape(-1, grad_pre.shape[-1])
    return grad_pre @ weight, rows.t() @ x.reshape(-1, x.shape[-1]), rows.sum(0)


linear_gelu_backward.register_fake(_ref._linear_gelu_backward_fake)
_ref.linear_gelu_backward = linear_gelu_backward
