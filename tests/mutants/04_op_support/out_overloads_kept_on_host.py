"""Mistake: an out= overload writes into a tensor the caller passed, like an in-place form, so `aten.add.out` is
no NPU op. Breaks "An out= overload keeps its op's name ... aten.add.out ... is "add", like aten.add.Tensor,
because the overload is never part of the canonical name" (README.md, 'In-place forms are not their functional op';
blind round 3, lesson gap on out= overloads)."""
import torch

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_overload = _ref._overload_op


def _overload_op(target):
    if isinstance(target, torch._ops.OpOverload) and target._overloadname.startswith("out"):
        return None  # the wrong rule
    return _overload(target)


_ref._overload_op = _overload_op

KILLED_BY = ("in_place_forms_are_not_their_functional_op",)

canonical_op, NPUOperatorSupport, classify = _ref.canonical_op, _ref.NPUOperatorSupport, _ref.classify
