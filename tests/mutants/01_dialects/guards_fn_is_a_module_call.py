"""Mistake: every call_module is MODULE, including the `_guards_fn` that `ep.module()` adds, so an
exported module reads as module-level and aten-level at once."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = ("export_module_guards_fn_is_neutral",)


def node_dialect(node):
    return Dialect.MODULE if node.op == "call_module" else _right_node_dialect(node)



# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
