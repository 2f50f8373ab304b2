"""Mistake: a pass may have left gm.code out of date, so detect_dialect calls gm.recompile() first "to be sure". The
answer is the same, but the caller's module now runs other code: a pass halfway through (a node retargeted, not yet
recompiled) gets other numbers from gm(x) after the call. Breaks "`detect_dialect` must leave the graph and its
subgraphs exactly as it found them — no `eliminate_dead_code()`, no `recompile()`, no pass" and "A caller that has
retargeted a node and not yet recompiled must get the same numbers from `gm(x)` after your call as before it".
Blind round 4's wrong_recompile.py."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("unread_nodes_count_and_the_graph_is_left_alone",)


def detect_dialect(gm):
    gm.recompile()
    return _ref.detect_dialect(gm)
