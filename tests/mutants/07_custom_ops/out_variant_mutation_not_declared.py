"""Mistake: the out= variant writes into `out` but registers with mutates_args=() (and a fake kernel returning None):
eager runs fine; opcheck's schema test fails, and a compiler drops the call as having no effect."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('out_variant_declares_what_it_writes', 'out_variant_writes_the_answer')


@torch.library.custom_op("npu_mutant_out::linear_gelu_out", mutates_args=())
def linear_gelu_out(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, out: torch.Tensor,
                    approximate: str = "none") -> None:
    out.copy_(F.gelu(F.linear(x, weight, bias), approximate=approximate))


@linear_gelu_out.register_fake
def _fake(x, weight, bias, out, approximate="none"):
    return None
