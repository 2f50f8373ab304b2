"""Mistake: the report knows GELU nodes only, so GPT-2's gelu_new (the tanh formula written out) is never reported
and a pass that fuses 0 of GPT-2's MLPs says nothing. The lesson: "reports every GELU still in the graph — a GELU
node in any dialect ..., or the tanh formula written out".
"""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_ref.is_written_out_gelu = lambda node: False
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs

KILLED_BY = (
    "report_finds_the_written_out_gelu_in_every_spelling",
    "report_leaves_out_formulas_that_are_not_a_gelu",
    "report_says_why_gpt2s_mlps_are_not_fused",
)
