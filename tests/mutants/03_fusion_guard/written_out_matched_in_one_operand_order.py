"""Mistake: the written-out GELU is matched only as transformers writes it, `0.5 * x * (1 + tanh(...))`: a model
that writes `x * 0.5 * (tanh(u) + 1)` or `(1 + tanh(u)) * (0.5 * x)` is not reported. The lesson: "each in either
order (`x * 0.5` or `0.5 * x`, `tanh(u) + 1` or `1 + tanh(u)`)".
"""
from torch.fx import Node

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")


def is_written_out_gelu(node):
    if not _ref.calls(node, _ref.MULTIPLIES) or len(node.args) != 2:
        return False
    half, plus = node.args
    return (_ref.calls(half, _ref.MULTIPLIES) and half.args[0] == 0.5 and isinstance(plus, Node)
            and _ref.calls(plus, _ref.ADDS) and plus.args[0] == 1 and _ref.calls(plus.args[1], _ref.TANHS))


_ref.is_written_out_gelu = is_written_out_gelu
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs

KILLED_BY = (
    "report_finds_the_written_out_gelu_in_every_spelling",
    "report_leaves_out_formulas_that_are_not_a_gelu",
    "report_says_why_gpt2s_mlps_are_not_fused",
)
