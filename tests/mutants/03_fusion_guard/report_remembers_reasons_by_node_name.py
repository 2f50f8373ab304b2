"""Mistake: the report remembers each node name's reason from the first graph it saw (a cache to save work), so in
the next graph, where `mul_3` or `gelu` is another node, it repeats the old answer. The lesson: "it decides from the
graph it is given, like the pass".
"""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_report = _ref.unfused_pairs
_seen: dict = {}


def unfused_pairs(gm):
    report = []
    for name, reason in _right_report(gm):
        report.append((name, _seen.setdefault(name, reason)))
    return report


fuse_linear_gelu = _ref.fuse_linear_gelu

KILLED_BY = ("report_after_a_pass_leaves_out_the_fused_pairs", "report_gives_each_gelu_its_reason")
