"""Mistake: size arithmetic means a recorded value that is a torch.SymInt or torch.SymFloat; a plain int, float or
bool falls through to the target lookup, so operator.mul(2, 3) recorded as 6 is "mul". Breaks "is a torch.SymInt
(or a torch.SymFloat, or a plain Python int, float or bool ...) instead of a tensor ... A call node whose recorded
value is not a tensor is no NPU op" (README.md, 'arithmetic on sizes'; blind round 3, wrong_15)."""
import torch

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")


def _computes_no_tensor(node):
    for key in ("val", "example_value"):
        if key in node.meta:
            return isinstance(node.meta[key], (torch.SymInt, torch.SymFloat))  # the wrong rule
    return False


_ref._computes_no_tensor = _computes_no_tensor

KILLED_BY = ("size_arithmetic_is_no_npu_op",)

canonical_op, NPUOperatorSupport, classify = _ref.canonical_op, _ref.NPUOperatorSupport, _ref.classify
