"""Mistake (blind round 4, the backward side of wrong_12): in float16 and bfloat16 the backward kernel computes the
gradients in float32 and casts them back; float32 and float64 are computed as they are. Lesson: "... through the op
and its backward, each computed in x's own dtype (no float32 detour)". On a (64, 32) x about a third of grad_x
differs from eager autograd, computed in x's dtype."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('gradients_match_eager',)
_exact = _ref.linear_gelu_backward


@torch.library.custom_op("npu_mutant_bwd_fp32_half::linear_gelu_backward", mutates_args=())
def linear_gelu_backward(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                         approximate: str = "none") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    if x.dtype not in (torch.float16, torch.bfloat16):
        return tuple(t.clone() for t in _exact(grad, x, weight, bias, approximate))
    g, xf, wf = grad.float(), x.float(), weight.float()
    grad_pre = torch.ops.aten.gelu_backward(g, F.linear(xf, wf, None if bias is None else bias.float()),
                                            approximate=approximate)
    rows = grad_pre.reshape(-1, grad_pre.shape[-1])
    answers = grad_pre @ wf, rows.t() @ xf.reshape(-1, xf.shape[-1]), rows.sum(0)
    return tuple(t.to(x.dtype) for t in answers)


linear_gelu_backward.register_fake(_ref._linear_gelu_backward_fake)
_ref.linear_gelu_backward = linear_gelu_backward
