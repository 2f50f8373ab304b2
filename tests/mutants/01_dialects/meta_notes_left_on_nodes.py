"""Mistake: node.meta is a scratch pad, not the graph, so detect_dialect leaves a note of each node's level in
node.meta["dialect"] (handy for a later debug print); nodes, targets and code are untouched. Breaks "each node's
`node.meta`, which belongs to the graph too (passes downstream read `val`, `stack_trace`, `nn_module_stack` from
it), so add, remove or replace no key, not even a note of your own". Blind round 4's wrong_meta_annotation.py."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("unread_nodes_count_and_the_graph_is_left_alone",)


def detect_dialect(gm):
    for node in _ref.graph_nodes(gm):
        node.meta["dialect"] = _ref.node_dialect(node)
    return _ref.detect_dialect(gm)
