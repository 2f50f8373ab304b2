"""Mistake: normalise the recorded value first: node.meta.setdefault("val", node.meta.get("example_value")), so every
later read looks at "val" only. The answers stay right, but nodes of Dynamo and symbolic_trace graphs gain a "val" key
(None where nothing was recorded) that passes downstream read as export's value. Breaks "each node's `node.meta`,
which belongs to the graph too ..., so add, remove or replace no key"."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError

KILLED_BY = ("unread_nodes_count_and_the_graph_is_left_alone",)


def node_dialect(node):
    node.meta.setdefault("val", node.meta.get("example_value"))
    return _ref.node_dialect(node)


def detect_dialect(gm):
    for node in _ref.graph_nodes(gm):
        node.meta.setdefault("val", node.meta.get("example_value"))
    return _ref.detect_dialect(gm)
