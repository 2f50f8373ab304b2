"""Mistake: int and bool tensors are index math the host does, so an int64 add or mul (argmax(h) + 1) is no NPU
op. is_node_supported looks at the op only, never at the dtype (blind round 2, wrong_int_tensors_host)."""
import torch

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_canonical = _ref.canonical_op


def canonical_op(node, submodules):
    for key in ("val", "example_value"):
        val = node.meta.get(key)
        if isinstance(val, torch.Tensor) and not val.dtype.is_floating_point:
            return None  # the wrong rule
    return _canonical(node, submodules)


_ref.canonical_op = canonical_op  # NPUOperatorSupport and classify ask this one

KILLED_BY = ("support_ignores_dtype",)

NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
