"""Mistake: size arithmetic is recognised by its recorded value being a torch.SymInt; any other value falls
through to the target lookup. With dynamic=True, Dynamo turns `n = x.shape[0]; x.reshape(int(n * 0.5), -1)` into
an operator.mul whose value is a SymFloat, which this calls "mul" and sends to the NPU. A call node whose recorded
value is not a tensor is no NPU op (blind round 1, W08)."""
import torch

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")


def _computes_no_tensor(node):
    for key in ("val", "example_value"):
        if key in node.meta:
            return isinstance(node.meta[key], torch.SymInt)  # the wrong rule
    return False


_ref._computes_no_tensor = _computes_no_tensor

KILLED_BY = ("size_arithmetic_is_no_npu_op",)

canonical_op, NPUOperatorSupport, classify = _ref.canonical_op, _ref.NPUOperatorSupport, _ref.classify
