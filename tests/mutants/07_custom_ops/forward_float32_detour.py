"""Mistake: the forward kernel computes in float32 and casts the answer back to x's dtype (a float32 detour): in
float16 and bfloat16 it rounds once where F.gelu(F.linear(...)) in x's dtype rounds twice (blind round 2,
wrong_fw_fp32_detour)."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('forward_op_computes_linear_gelu', 'gradients_match_eager')


@torch.library.custom_op("npu_mutant_fw_fp32::linear_gelu", mutates_args=())
def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                approximate: str = "none") -> torch.Tensor:
    wide = F.gelu(F.linear(x.float(), weight.float(), None if bias is None else bias.float()),
                  approximate=approximate)
    return wide.to(x.dtype)


linear_gelu.register_fake(_ref._linear_gelu_fake)
linear_gelu.register_autograd(_ref._backward, setup_context=_ref._setup_context)
_ref.linear_gelu = linear_gelu
