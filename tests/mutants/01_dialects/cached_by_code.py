"""Mistake: gm.code identifies the graph's contents, so detect_dialect's answers are cached by it. A pass that
sets node.target has changed the graph before it calls gm.recompile(), and gm.code changes only then. Blind
round 1's wrong_code_cache.py."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect
_right_detect_dialect = _ref.detect_dialect

KILLED_BY = ("answers_for_the_graph_as_it_is_now",)
_answers: dict = {}


def detect_dialect(gm):
    key = gm.code
    if key not in _answers:
        _answers[key] = _right_detect_dialect(gm)
    return _answers[key]
