"""Mistake: export's `_guards_fn` is recognised by its leading underscore, so every submodule whose name starts
with one (`self._fc`) is taken for bookkeeping instead of a module call."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = ("call_module_node_is_module",)


def node_dialect(node):
    if node.op == "call_module" and str(node.target).startswith("_"):
        return None
    return _right_node_dialect(node)


# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
