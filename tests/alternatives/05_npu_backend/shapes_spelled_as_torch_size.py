"""Kata 5 -- blind round 2's correct_torchsize_shapes: the reference's design, with one choice the lesson leaves
open taken the other way. A refused signature's warning spells the input shapes the way `print(x.shape)` does,
`torch.Size([2, 4])`, where the reference writes `(2, 4) float32`; the lesson asks only that the warning name
them. (As first written, the check accepted only the tuple spelling and failed this attempt.)"""
import torch

from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend


def describe_inputs(args):
    return ", ".join(f"{a.shape} of {a.dtype}" if isinstance(a, torch.Tensor) else f"int {a}" for a in args)


_ref.describe_inputs = describe_inputs
