"""Mistake: answers are cached per GraphModule and per node, so after a pass rewrites a graph in place the old
answer comes back."""
import weakref

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect, _right_detect_dialect = _ref.node_dialect, _ref.detect_dialect

KILLED_BY = ("answers_for_the_graph_as_it_is_now",)
_node_answers: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_graph_answers: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def node_dialect(node):
    if node not in _node_answers:
        _node_answers[node] = _right_node_dialect(node)
    return _node_answers[node]


def detect_dialect(gm):
    if gm not in _graph_answers:
        _graph_answers[gm] = _right_detect_dialect(gm)
    return _graph_answers[gm]
