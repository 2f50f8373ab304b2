"""Mistake: any node whose recorded value is a SymInt is shape arithmetic, OpOverloads included, so
aten.sym_size.int (an aten op, tagged core) comes out neutral."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = (
    "dynamo_export_graphs",
    "random_mlps_in_every_capture",
    "shape_arithmetic_is_neutral",
)


def node_dialect(node):
    if node.op == "call_function" and isinstance(_ref._recorded_value(node), torch.SymInt):
        return None
    return _right_node_dialect(node)


# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
