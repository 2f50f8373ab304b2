"""Mistake: a call_function whose recorded value is present and not a tensor is shape arithmetic, as if sizes were
the only other values a graph computes. torch.chunk records a tuple of tensors, so Dynamo's torch.chunk comes out
neutral instead of torch-level. Blind round 2's wrong_not_tensor_is_size.py."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = ("torch_level_calls_are_torch",)


def node_dialect(node):
    if node.op == "call_function" and not isinstance(node.target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        recorded = _ref._recorded_value(node)
        if recorded is not None and not isinstance(recorded, torch.Tensor):
            return None
    return _right_node_dialect(node)


# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
