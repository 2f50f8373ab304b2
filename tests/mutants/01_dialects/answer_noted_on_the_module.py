"""Mistake: the answer is the module's business too, so detect_dialect writes it down where a later reader can find
it: gm.meta["dialect"] and an attribute gm.dialect (never read back, so no stale answer). Breaks "`gm.meta`, the
module's attributes and submodules (set nothing on them, swap no subgraph)"."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("unread_nodes_count_and_the_graph_is_left_alone",)


def detect_dialect(gm):
    answer = _ref.detect_dialect(gm)
    gm.meta["dialect"] = answer
    gm.dialect = answer
    return answer
