"""Mistake: `gm.graph = gm.graph` "changes nothing", so detect_dialect re-seats the graph (say, after reading it from a
copy). GraphModule's graph setter recompiles: the caller's code and forward change under it. Breaks "`detect_dialect`
must leave the graph and its subgraphs exactly as it found them" (the generated code with the `forward` it runs)."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("unread_nodes_count_and_the_graph_is_left_alone",)


def detect_dialect(gm):
    gm.graph = gm.graph
    return _ref.detect_dialect(gm)
