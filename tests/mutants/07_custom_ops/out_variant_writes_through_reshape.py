"""Mistake (blind round 4, wrong_08): the out= kernel flattens `out` with reshape and copies into that:
`out.reshape(-1, out.shape[-1]).copy_(...)`. Lesson: "`out` may be a view of a larger buffer ... Write into its
memory (`out.copy_(...)`), and nowhere else." When out's leading dimensions do not merge (a middle slice of a
buffer, or a transposed pair), reshape returns a copy, and the answer goes into that copy."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('out_variant_writes_the_answer',)


@torch.library.custom_op("npu_mutant_out_reshape::linear_gelu_out", mutates_args=("out",))
def linear_gelu_out(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, out: torch.Tensor,
                    approximate: str = "none") -> None:
    result = F.gelu(F.linear(x, weight, bias), approximate=approximate)
    out.reshape(-1, out.shape[-1]).copy_(result.reshape(-1, out.shape[-1]))
