"""Mistake: a 0-dim tensor is a scalar the host computes, so relu(h.sum()) * 2 + 1 is no NPU op. A 0-dim tensor
is a tensor like any other: only non-tensor values are size arithmetic (blind round 2, wrong_zero_dim_host)."""
import torch

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_canonical = _ref.canonical_op


def canonical_op(node, submodules):
    for key in ("val", "example_value"):
        val = node.meta.get(key)
        if isinstance(val, torch.Tensor) and val.dim() == 0:
            return None  # the wrong rule
    return _canonical(node, submodules)


_ref.canonical_op = canonical_op  # NPUOperatorSupport and classify ask this one

KILLED_BY = ("size_arithmetic_is_no_npu_op", "support_ignores_dtype")

NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
