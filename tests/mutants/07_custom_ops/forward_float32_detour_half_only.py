"""Mistake (blind round 4, wrong_12): in float16 and bfloat16 the forward kernel computes in float32 and casts back
"for accuracy"; float32 and float64 are computed as they are. Lesson: "The dtypes are the NPU's: float32, float64
and the half-precision float16 and bfloat16, through the op and its backward, each computed in x's own dtype (no
float32 detour)". It rounds once where eager, in x's dtype, rounds after the Linear and after the GELU: about a
quarter of the outputs of a (64, 32) x differ from eager."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('forward_op_computes_linear_gelu',)


@torch.library.custom_op("npu_mutant_fw_fp32_half::linear_gelu", mutates_args=())
def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                approximate: str = "none") -> torch.Tensor:
    if x.dtype in (torch.float16, torch.bfloat16):
        wide = F.gelu(F.linear(x.float(), weight.float(), None if bias is None else bias.float()),
                      approximate=approximate)
        return wide.to(x.dtype)
    return F.gelu(F.linear(x, weight, bias), approximate=approximate)


linear_gelu.register_fake(_ref._linear_gelu_fake)
linear_gelu.register_autograd(_ref._backward, setup_context=_ref._setup_context)
_ref.linear_gelu = linear_gelu
