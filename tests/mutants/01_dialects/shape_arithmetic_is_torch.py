"""Mistake: operator.mul on sizes is a call_function that is not an OpOverload, so it is taken for torch-level
compute; export with a Dim (and aot_autograd with dynamic=True) then reads as mixed."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError

KILLED_BY = (
    "decomposed_exports_are_core_aten",
    "dynamo_export_graphs",
    "random_mlps_in_every_capture",
    "shape_arithmetic_is_neutral",
    "symbolic_batch_graphs_are_aten",
)

_ref.SHAPE_VALUES = ()  # no recorded value counts as a size
node_dialect, detect_dialect = _ref.node_dialect, _ref.detect_dialect
