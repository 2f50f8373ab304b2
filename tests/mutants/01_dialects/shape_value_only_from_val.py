"""Mistake: shape arithmetic is recognised by meta["val"] only. Dynamo records values in meta["example_value"],
so its `batch * tokens` on SymInts reads as torch-level compute."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError

KILLED_BY = (
    "dynamo_export_graphs",
    "shape_arithmetic_is_neutral",
)


def _recorded_value(node):
    return node.meta.get("val")


# the reference's node_dialect reads values with the module-level _recorded_value: point it at the mistake
_ref._recorded_value = _recorded_value
node_dialect, detect_dialect = _ref.node_dialect, _ref.detect_dialect
