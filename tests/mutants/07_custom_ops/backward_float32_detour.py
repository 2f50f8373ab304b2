"""Mistake: the backward kernel computes the gradients in float32 and casts them back to x's dtype (a float32
detour): in float16 and bfloat16 its gradients round where eager autograd's, computed in x's dtype, do not
(blind round 2, wrong_bw_fp32_detour)."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('gradients_match_eager',)


@torch.library.custom_op("npu_mutant_bwd_fp32::linear_gelu_backward", mutates_args=())
def linear_gelu_backward(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                         approximate: str = "none") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g, xf, wf = grad.float(), x.float(), weight.float()
    grad_pre = torch.ops.aten.gelu_backward(g, F.linear(xf, wf, None if bias is None else bias.float()),
                                            approximate=approximate)
    rows = grad_pre.reshape(-1, grad_pre.shape[-1])
    answers = grad_pre @ wf, rows.t() @ xf.reshape(-1, xf.shape[-1]), rows.sum(0)
    return tuple(t.to(x.dtype) for t in answers)


linear_gelu_backward.register_fake(_ref._linear_gelu_backward_fake)
_ref.linear_gelu_backward = linear_gelu_backward
