"""Mistake: a `sym_size.int` that reads the Linear's output reads only its size, not its values, so the guard does
not count it, and the rewrite points it at the fused node, "which has the same size". After the fusion the product
is gone: the fused node has the GELU's shape (the N-D batch where the views are dropped), and the guard the lesson
states counts every reader (blind round k03-r2, wrong_size_reader_ignored)."""
import torch

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = ("linear_output_with_two_users_is_not_fused",)

SYM_SIZE = torch.ops.aten.sym_size.int


def feeds_only(node, user):
    return [u for u in node.users if u.target is not SYM_SIZE] == [user]


_rewrite = _ref.rewrite


def rewrite(gm, match):
    readers = [u for u in match.linear.users if u.target is SYM_SIZE]
    linear = match.linear
    for reader in readers:  # out of the way while the reference erases the Linear; rewired to the fused node after
        reader.replace_input_with(linear, match.gelu)
    fused = _rewrite(gm, match)
    for reader in readers:
        if reader.args[0] is not fused:
            reader.replace_input_with(reader.args[0], fused)
    return fused


_ref.feeds_only = feeds_only
_ref.rewrite = rewrite
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
