"""Mistake: nodes nobody reads are "not the program", so detect_dialect runs gm.graph.eliminate_dead_code() first
and classifies what is left: a relu that a half-finished pass left unread no longer counts, and the caller's graph
loses a node. Breaks "Every node counts, whether or not another node reads its result" and "detect_dialect only
reads the graph: ... no eliminate_dead_code()". Blind round 3's wrong_dce_first.py."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("only_the_subgraphs_higher_order_ops_call_count", "unread_nodes_count_and_the_graph_is_left_alone")


def detect_dialect(gm):
    gm.graph.eliminate_dead_code()
    return _ref.detect_dialect(gm)
