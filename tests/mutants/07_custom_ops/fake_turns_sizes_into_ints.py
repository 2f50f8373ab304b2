"""Mistake: the fake kernel reads the sizes as Python ints. opcheck passes; under export with a Dim the batch
size is fixed to the example's value."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('fake_kernel_keeps_sizes_symbolic', 'training_handles_a_new_batch_size')


@torch.library.custom_op("npu_mutant_fake_ints::linear_gelu", mutates_args=())
def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                approximate: str = "none") -> torch.Tensor:
    return F.gelu(F.linear(x, weight, bias), approximate=approximate)


@linear_gelu.register_fake
def _fake(x, weight, bias, approximate="none"):
    return x.new_empty([int(size) for size in x.shape[:-1]] + [int(weight.shape[0])])


linear_gelu.register_autograd(_ref._backward, setup_context=_ref._setup_context)
_ref.linear_gelu = linear_gelu
