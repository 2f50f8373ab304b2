"""Mistake: MixedDialectError names only the aten-level node, so the reader does not learn what it clashes with."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = (
    "mixed_levels_across_subgraphs_raise_mixed",
    "module_and_aten_nodes_raise_mixed",
    "torch_and_aten_nodes_raise_mixed",
    "unread_nodes_count_and_the_graph_is_left_alone",
)


def detect_dialect(gm):
    try:
        return _ref.detect_dialect(gm)
    except MixedDialectError:
        aten_node = next(n for n in _ref.graph_nodes(gm) if node_dialect(n) in (Dialect.ATEN, Dialect.CORE_ATEN))
        raise MixedDialectError(f"graph mixes levels: node {aten_node.name!r} is aten-level") from None
