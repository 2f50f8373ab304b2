"""Mistake (blind round 1): the fake kernel builds its output with torch.empty(shape, dtype=x.dtype): the float32 trap
avoided, but the device forgotten. On CPU tensors it looks right; on meta tensors (or any other device) the fake
output lands on the CPU."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('fake_kernel_matches_real_kernel',)


@torch.library.custom_op("npu_mutant_no_device::linear_gelu", mutates_args=())
def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                approximate: str = "none") -> torch.Tensor:
    return F.gelu(F.linear(x, weight, bias), approximate=approximate)


@linear_gelu.register_fake
def _fake(x, weight, bias, approximate="none"):
    return torch.empty((*x.shape[:-1], weight.shape[0]), dtype=x.dtype)


linear_gelu.register_autograd(_ref._backward, setup_context=_ref._setup_context)
_ref.linear_gelu = linear_gelu
