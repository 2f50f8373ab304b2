"""Mistake: "each in either order" read as "either factor may stand anywhere": the swapped-order test asks for the
half *or* the one-plus-tanh instead of both, so `(1 + tanh(u)) * z` and `tanh(u) * (0.5 * z)` — one half of the
formula alone — are reported as written-out GELUs. The lesson: the written-out GELU is "a multiply of a multiply by
0.5 and an add of 1 to a tanh"; a formula missing either part is not one.
"""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")


def is_written_out_gelu(node):
    if not _ref.calls(node, _ref.MULTIPLIES) or len(node.args) != 2:
        return False
    first, second = node.args
    in_written_order = _ref.is_half(first) and _ref.is_one_plus_tanh(second)
    return in_written_order or _ref.is_half(second) or _ref.is_one_plus_tanh(first)


_ref.is_written_out_gelu = is_written_out_gelu
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs

KILLED_BY = ("report_leaves_out_formulas_that_are_not_a_gelu",)
