"""Mistake (blind round 1): the out= variant "puts the answer into out" with out.data = result. out reads right
afterwards and opcheck passes, but nothing was written into the memory the caller passed: a view of a runtime's
buffer stays as it was, eagerly and compiled."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('out_variant_writes_the_answer',)


@torch.library.custom_op("npu_mutant_out_data::linear_gelu_out", mutates_args=("out",))
def linear_gelu_out(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, out: torch.Tensor,
                    approximate: str = "none") -> None:
    out.data = F.gelu(F.linear(x, weight, bias), approximate=approximate)
