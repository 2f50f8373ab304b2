"""Mistake: the report first tidies the graph with eliminate_dead_code(), so that GELUs nobody reads are not
reported. Breaks "Changes nothing in `gm`" and "One (node name, reason) per GELU of gm": it deletes an unread
in-place op too, which changes what the graph computes."""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = ("report_gives_each_gelu_its_reason",)
_report = _ref.unfused_pairs


def unfused_pairs(gm):
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return _report(gm)


fuse_linear_gelu = _ref.fuse_linear_gelu
