"""Mistake: the written-out GELU is matched by its shape alone -- a multiply of a multiply and an add of a tanh --
without its numbers, so `0.7 * x * (1 + tanh(u))` or `0.5 * x * (2 + tanh(u))` is reported as a GELU. The lesson:
"Only that formula is a GELU: another number (`0.7 * x`, `2 + tanh(u)`) ... is not, and is not reported."
"""
from torch.fx import Node

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")


def _mul(node):
    return _ref.calls(node, _ref.MULTIPLIES) and len(node.args) == 2


def _plus_tanh(node):
    return _ref.calls(node, _ref.ADDS) and any(isinstance(a, Node) and _ref.calls(a, _ref.TANHS) for a in node.args)


def is_written_out_gelu(node):
    if not _mul(node):
        return False
    first, second = node.args
    return (_mul(first) and _plus_tanh(second)) or (_mul(second) and _plus_tanh(first))


_ref.is_written_out_gelu = is_written_out_gelu
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs

KILLED_BY = ("report_leaves_out_formulas_that_are_not_a_gelu",)
