"""Mistake: levels are compared between neighbouring nodes only, so a mixed graph whose aten-level and
torch- or module-level nodes never touch (a getitem between them) passes as one dialect."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = (
    "mixed_levels_across_subgraphs_raise_mixed",
    "module_and_aten_nodes_raise_mixed",
    "torch_and_aten_nodes_raise_mixed",
)
_ATEN, _HIGH = (Dialect.ATEN, Dialect.CORE_ATEN), (Dialect.MODULE, Dialect.TORCH)


def detect_dialect(gm):
    nodes = list(_ref.graph_nodes(gm))
    for a, b in zip(nodes, nodes[1:]):
        pair = {node_dialect(a), node_dialect(b)}
        if pair & set(_ATEN) and pair & set(_HIGH):
            raise MixedDialectError(f"graph mixes levels: nodes {a.name!r} and {b.name!r}")
    found = {node_dialect(n) for n in nodes} - {None}
    for dialect in (Dialect.MODULE, Dialect.TORCH, Dialect.ATEN, Dialect.CORE_ATEN):
        if dialect in found:
            return dialect
    return Dialect.TORCH
