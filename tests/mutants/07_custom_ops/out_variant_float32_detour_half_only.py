"""Mistake (blind round 6, w14b_out_half_detour): the out= kernel computes float16 and bfloat16 calls in float32 and
casts back "for accuracy", so `out` holds the float32 computation's rounding, not the op's. Lesson: "through the op
and its backward, each computed in x's own dtype (no float32 detour)": the out= variant is the op writing into a
buffer."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward = _ref.linear_gelu, _ref.linear_gelu_backward
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('out_variant_writes_the_answer',)


@torch.library.custom_op("npu_mutant_out_fp32_half::linear_gelu_out", mutates_args=("out",))
def linear_gelu_out(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, out: torch.Tensor,
                    approximate: str = "none") -> None:
    if x.dtype in (torch.float16, torch.bfloat16):
        wide = F.gelu(F.linear(x.float(), weight.float(), None if bias is None else bias.float()),
                      approximate=approximate)
        out.copy_(wide.to(x.dtype))
        return
    out.copy_(F.gelu(F.linear(x, weight, bias), approximate=approximate))
