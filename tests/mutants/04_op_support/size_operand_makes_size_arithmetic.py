"""Mistake: an operator.mul or operator.add with a SymInt or SymFloat among its operands is taken for size
arithmetic, whatever it computes: `relu(x * 2) * x.shape[0]` under dynamic=True multiplies a tensor by a size, and
its value is a tensor. Breaks "A call node whose recorded value is not a tensor is no NPU op, and one whose value is
a tensor is judged by its op whatever its operands" (README.md, 'What a node becomes'; blind round 6, w10_size_by_args)."""
import operator

import torch

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_canonical = _ref.canonical_op


def _symbolic(arg):
    value = getattr(arg, "meta", {}).get("val", getattr(arg, "meta", {}).get("example_value"))
    return isinstance(value, (torch.SymInt, torch.SymFloat))


def canonical_op(node, submodules):
    if node.op == "call_function" and node.target in (operator.mul, operator.add) and any(
            _symbolic(a) for a in node.args):
        return None  # the wrong rule: a size among the operands makes it size arithmetic
    return _canonical(node, submodules)


_ref.canonical_op = canonical_op  # NPUOperatorSupport and classify ask this one

KILLED_BY = ("size_arithmetic_is_no_npu_op",)

NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
