"""Mistake: every aten.mm / aten.addmm feeding a GELU is taken for a Linear, and its second matrix for the
weight, transposed or not. gelu(x @ w) with a square w decomposes to aten.mm(x, w): fused as
linear_gelu(x, w, None) it silently computes gelu(x @ w.T)."""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_transposed = _ref.transposed

KILLED_BY = (
    "matrix_product_without_transposed_weight_is_not_a_linear",
    "no_state_between_calls",
    "report_after_a_pass_leaves_out_the_fused_pairs",
    "report_gives_each_gelu_its_reason",
)


def transposed(node):
    weight = _right_transposed(node)
    return weight if weight is not None else node  # "the weight is whatever mm multiplies by"


_ref.transposed = transposed
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
