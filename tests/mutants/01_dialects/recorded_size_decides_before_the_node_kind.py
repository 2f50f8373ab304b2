"""Mistake: a node that records a size is neutral whatever kind of node it is, so the size test runs before the
call_method row: Dynamo's `x.numel()` with a symbolic batch, a call_method recording a SymInt, comes out neutral
instead of TORCH. Breaks "`node_dialect(node)` returns the first row that matches, top to bottom" (the call_method
row comes before the size row). Blind round 6's w07_method_size.py."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError

KILLED_BY = ("torch_level_calls_are_torch",)

_right_node_dialect = _ref.node_dialect


def node_dialect(node):
    if node.op == "call_method" and isinstance(_ref._recorded_value(node), _ref.SHAPE_VALUES):
        return None
    return _right_node_dialect(node)


# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
