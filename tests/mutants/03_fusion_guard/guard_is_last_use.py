"""Mistake: the guard reasons like liveness -- "the pre-activation is dead after the GELU, so the GELU may take it"
-- and checks that the GELU is the Linear's *last* reader (`list(linear.users)[-1] is gelu`). A residual add or a
returned value read z after the GELU, so those are refused, for the wrong reason. But a reader *before* the GELU (a
sigmoid gate computed from the same z) still needs z: the fused node removes it, and that reader loses its input."""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = (
    "linear_output_with_two_users_is_not_fused",
    "report_after_a_pass_leaves_out_the_fused_pairs",
    "report_gives_each_gelu_its_reason",
)


def feeds_only(node, user):
    return list(node.users)[-1] is user


_ref.feeds_only = feeds_only
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
