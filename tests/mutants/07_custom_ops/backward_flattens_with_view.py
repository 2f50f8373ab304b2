"""Mistake (blind round 2, wrong_bw_view): the backward kernel flattens x's leading dimensions with .view(-1, in)
("activations are contiguous"). A transposed activation is not: view then fails ("view size is not compatible with
input tensor's size and stride"), where F.linear's own backward, and reshape, work on any strides."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('gradients_match_eager',)


@torch.library.custom_op("npu_mutant_bwd_view::linear_gelu_backward", mutates_args=())
def linear_gelu_backward(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                         approximate: str = "none") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    grad_pre = torch.ops.aten.gelu_backward(grad, F.linear(x, weight, bias), approximate=approximate)
    rows = grad_pre.reshape(-1, grad_pre.shape[-1])
    return grad_pre @ weight, rows.t() @ x.view(-1, x.shape[-1]), rows.sum(0)


linear_gelu_backward.register_fake(_ref._linear_gelu_backward_fake)
_ref.linear_gelu_backward = linear_gelu_backward
