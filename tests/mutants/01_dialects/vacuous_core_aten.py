"""Mistake: "CORE_ATEN when every aten op is core" read without "and there is one": a graph whose only op is a
custom op has no aten op that is not core, so it comes out CORE_ATEN instead of the nothing-to-go-on TORCH."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("graph_without_ops_is_torch",)


def detect_dialect(gm):
    dialect = _ref.detect_dialect(gm)
    found = {node_dialect(n) for n in _ref.graph_nodes(gm)} - {None}
    if not found and any(n.op == "call_function" for n in gm.graph.nodes):
        return Dialect.CORE_ATEN
    return dialect
