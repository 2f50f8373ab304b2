"""Mistake: a call through an aten OpOverloadPacket (`torch.ops.aten.relu(x)`) is aten-level.

The packet is a Python callable that picks its overload when it runs; only lowering tools record an overload.
"""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = (
    "aten_packets_are_torch",
    "module_graphs_with_custom_ops_and_packets_are_module",
    "symbolic_trace_of_functional_code_is_torch",
)


def node_dialect(node):
    if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverloadPacket):
        if _ref._namespace(node.target) == "aten":
            return Dialect.ATEN
    return _right_node_dialect(node)


# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
