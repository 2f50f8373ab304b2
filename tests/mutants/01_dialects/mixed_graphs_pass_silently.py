"""Mistake: no mixed-level check; a half-lowered graph gets a dialect instead of an error."""
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
    found = {node_dialect(n) for n in _ref.graph_nodes(gm)} - {None}
    for dialect in (Dialect.MODULE, Dialect.TORCH, Dialect.ATEN, Dialect.CORE_ATEN):
        if dialect in found:
            return dialect
    return Dialect.TORCH
