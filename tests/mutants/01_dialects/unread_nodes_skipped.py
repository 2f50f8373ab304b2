"""Mistake: a call node whose result no node reads is skipped (the graph is left alone), at every depth: a
half-finished pass's unread aten node in a cond branch no longer makes the graph ATEN. Breaks "Every node counts,
whether or not another node reads its result"."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("core_means_the_core_tag", "unread_nodes_count_and_the_graph_is_left_alone")
_all_nodes = _ref.graph_nodes


def graph_nodes(gm):
    for node in _all_nodes(gm):
        if node.users or not node.op.startswith("call_"):
            yield node


# the reference's detect_dialect walks the module-level graph_nodes: point it at the mistake
_ref.graph_nodes = graph_nodes
detect_dialect = _ref.detect_dialect
