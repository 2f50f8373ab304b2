"""Mistake: reading is harmless, and normalising is reading: where a node has Dynamo's "example_value" and no "val",
copy it into "val" once (node.meta.setdefault("val", ...)) so every capture is read the same way. The answers stay
right (the same value is read), but every Dynamo node, in the subgraphs too, gains a "val" key that passes downstream
take for export's or make_fx's. Unlike val_filled_in_from_example_value, it writes nothing on symbolic_trace, make_fx
or export nodes: only a Dynamo capture shows it. Breaks "each node's `node.meta`, which belongs to the graph too ...,
so add, remove or replace no key, not even a note of your own". Blind round 5's wrong_meta_normalise.py."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError

KILLED_BY = ("unread_nodes_count_and_the_graph_is_left_alone",)


def _normalise(node):
    if "val" not in node.meta and "example_value" in node.meta:
        node.meta.setdefault("val", node.meta["example_value"])


def node_dialect(node):
    _normalise(node)
    return _ref.node_dialect(node)


def detect_dialect(gm):
    for node in _ref.graph_nodes(gm):
        _normalise(node)
    return _ref.detect_dialect(gm)
