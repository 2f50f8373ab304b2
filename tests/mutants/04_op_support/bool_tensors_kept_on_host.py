"""Mistake: a bool tensor is a mask, not numbers, so a mul or add whose recorded value is a bool tensor
((h > 0) * (h < 1)) is no NPU op; int and float tensors stay NPU ops. Breaks "a float64 or float16 node of an NPU
op is supported, and so is an int64 one, a bool one ... a tensor is a tensor, whatever its dtype or rank"
(README.md, 'Dtypes do not matter here'; blind round 3, wrong_17)."""
import torch

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_canonical = _ref.canonical_op


def canonical_op(node, submodules):
    for key in ("val", "example_value"):
        val = node.meta.get(key)
        if isinstance(val, torch.Tensor) and val.dtype == torch.bool:
            return None  # the wrong rule
    return _canonical(node, submodules)


_ref.canonical_op = canonical_op  # NPUOperatorSupport and classify ask this one

KILLED_BY = ("support_ignores_dtype",)

NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
