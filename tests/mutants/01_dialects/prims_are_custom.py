"""Mistake: only the aten namespace is PyTorch's own, so prims ops (prims.mul, prims.convert_element_type) are
taken for custom ops and a graph of prims reads as having no level at all."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError

KILLED_BY = ("prims_graphs_are_aten",)

_ref.ATEN_NAMESPACES = frozenset({"aten"})
node_dialect, detect_dialect = _ref.node_dialect, _ref.detect_dialect
