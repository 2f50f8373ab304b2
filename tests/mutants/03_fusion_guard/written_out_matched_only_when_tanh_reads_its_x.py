"""Mistake: the written-out GELU is reported only when its tanh's argument is computed from the same x the half
multiplies ("that is what makes it GELU(x)"), so `0.5 * z * (1 + tanh(y))` with another y is left out. The lesson
defines the formula by its multiplies, adds and numbers alone: "What the formula reads does not change its reason"
(blind round k03-r7, w21_formula_must_read_x: every formula in the checks read one x)."""
from torch.fx import Node

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_matches_the_shape = _ref.is_written_out_gelu


def _reads(node, value) -> bool:
    """`node` is `value` or computed from it."""
    seen, todo = set(), [node]
    while todo:
        n = todo.pop()
        if n is value:
            return True
        if isinstance(n, Node) and n not in seen:
            seen.add(n)
            todo.extend(n.all_input_nodes)
    return False


def is_written_out_gelu(node):
    if not _matches_the_shape(node):
        return False
    half, one_plus = node.args if _ref.is_half(node.args[0]) else reversed(node.args)
    x = next(a for a in half.args if isinstance(a, Node))
    tanh = next(a for a in one_plus.args if isinstance(a, Node))
    return _reads(tanh, x) and tanh is not x


_ref.is_written_out_gelu = is_written_out_gelu
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs

KILLED_BY = ("report_finds_the_written_out_gelu_in_every_spelling",)
