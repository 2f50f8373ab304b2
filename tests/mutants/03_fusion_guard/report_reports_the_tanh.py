"""Mistake: a written-out GELU is reported at its `tanh` node, the one node that names the formula, instead of at
its last multiply (the node whose value is the GELU's). The lesson: "Report that last multiply, not the `tanh`."
"""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")


def unfused_pairs(gm):
    report = []
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method") and _ref.calls(node, _ref.TANHS):
            report.append((node.name, "written_out"))
        elif _ref.gelu_approximate(gm, node) is not None:
            report.append((node.name, _ref.why_not_fused(gm, node)))
    return report


fuse_linear_gelu = _ref.fuse_linear_gelu

KILLED_BY = (
    "report_finds_the_written_out_gelu_in_every_spelling",
    "report_leaves_out_formulas_that_are_not_a_gelu",
    "report_says_why_gpt2s_mlps_are_not_fused",
)
