"""Mistake: a sym_size.int of the Linear's output "reads only a shape", so it is no reader: the guard ignores it
and the fusion moves it onto the fused node (where no view sits between Linear and GELU). Breaks "Every reader counts, whatever it reads the value for": with
no view between, the size is even the same, so only the fused count shows it."""
import torch

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = ("linear_output_with_two_users_is_not_fused",)
_rewrite = _ref.rewrite


def _is_size(node) -> bool:
    return node.op == "call_function" and node.target is torch.ops.aten.sym_size.int


def feeds_only(node, user) -> bool:
    if _ref.is_reshape(user):  # a view sandwich changes the size: there the reader counts
        return list(node.users) == [user]
    return [u for u in node.users if not _is_size(u)] == [user]


def rewrite(gm, match):
    sizes = [u for u in match.linear.users if _is_size(u)]
    for size in sizes:  # out of the way of the erase; put back on the fused node
        size.replace_input_with(match.linear, match.gelu)
    fused = _rewrite(gm, match)
    for size in sizes:
        if match.reshape is None:
            size.replace_input_with(match.gelu, fused)
    return fused


_ref.feeds_only, _ref.rewrite = feeds_only, rewrite
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
