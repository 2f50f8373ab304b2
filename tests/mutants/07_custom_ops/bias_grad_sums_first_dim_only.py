"""Mistake: the bias gradient sums over the first dimension only, right for a matrix input, wrong once x has more
leading dimensions."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('backward_keeps_each_calls_state', 'fake_kernel_matches_real_kernel', 'gradients_match_eager',
             'opcheck_passes_on_backward_op', 'opcheck_passes_on_forward_op')


@torch.library.custom_op("npu_mutant_bias_grad::linear_gelu_backward", mutates_args=())
def linear_gelu_backward(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                         approximate: str = "none") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    grad_pre = torch.ops.aten.gelu_backward(grad, F.linear(x, weight, bias), approximate=approximate)
    rows = grad_pre.reshape(-1, grad_pre.shape[-1])
    return grad_pre @ weight, rows.t() @ x.reshape(-1, x.shape[-1]), grad_pre.sum(0)


linear_gelu_backward.register_fake(_ref._linear_gelu_backward_fake)
_ref.linear_gelu_backward = linear_gelu_backward
