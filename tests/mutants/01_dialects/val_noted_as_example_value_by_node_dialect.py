"""Mistake: the other way round, and in node_dialect only: where a node has export's or make_fx's "val" and no
"example_value", node_dialect copies it into "example_value" (Dynamo's name) so that later reads find one key;
detect_dialect itself writes nothing. The answers stay right, but every node node_dialect was asked about gains a
key its capture never wrote. Breaks "each node's `node.meta`, which belongs to the graph too ..., so add, remove or
replace no key, not even a note of your own": node_dialect only reads, like detect_dialect."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, detect_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.detect_dialect

KILLED_BY = ("unread_nodes_count_and_the_graph_is_left_alone",)


def node_dialect(node):
    if "val" in node.meta and "example_value" not in node.meta:
        node.meta["example_value"] = node.meta["val"]
    return _ref.node_dialect(node)
