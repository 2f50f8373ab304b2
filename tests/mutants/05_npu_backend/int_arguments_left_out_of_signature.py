"""Mistake (blind round 2, wrong_int_args_not_in_key): "the int arguments follow from the tensors' shapes", so the
signature a program is kept under is the tensors' shapes and dtypes only. A partition whose tensor keeps its shape
while the sizes the host computed change (relu(x).reshape(len(y), -1)) gets the program compiled for other ints,
which the NPU refuses at run time: that call reruns on the CPU."""
import torch

from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("int_arguments_are_part_of_the_signature",)


def signature(args):
    return tuple((tuple(a.shape), a.dtype) for a in args if isinstance(a, torch.Tensor))


_ref.signature = signature
