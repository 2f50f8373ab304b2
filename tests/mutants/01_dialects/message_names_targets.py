"""Mistake: MixedDialectError quotes the nodes' targets ('block.0', 'aten.max.dim') instead of their names
(`block_0`, `max_dim`), so the reader cannot find them in the graph."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = (
    "mixed_levels_across_subgraphs_raise_mixed",
    "module_and_aten_nodes_raise_mixed",
    "torch_and_aten_nodes_raise_mixed",
    "unread_nodes_count_and_the_graph_is_left_alone",
)


def _describe(node):
    return f"{str(node.target)!r} is {_ref.LEVEL_NAMES[node_dialect(node)]}-level"


# the reference's detect_dialect builds its message with the module-level _describe: point it at the mistake
_ref._describe = _describe
detect_dialect = _ref.detect_dialect
