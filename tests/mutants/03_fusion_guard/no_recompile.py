"""Mistake: the graph is rewritten but gm.recompile() is never called.

gm.graph holds the fused nodes, so every structural look at the graph is right. But calling gm runs
gm.forward, Python code generated from the graph when it was last compiled: the old, unfused code. The
outputs match eager and the fused kernel never runs.
"""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = ("module_graphs_fuse", "dynamo_graphs_fuse", "export_graphs_fuse", "addmm_and_mm_fuse")


def fuse_linear_gelu(gm):
    matches = [match for node in gm.graph.nodes if (match := _ref.match_at(gm, node)) is not None]
    for match in matches:
        _ref.rewrite(gm, match)
    gm.graph.lint()
    return len(matches)
