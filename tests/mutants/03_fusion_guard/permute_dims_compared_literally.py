"""Mistake: a transposing permute is spelled exactly [1, 0] or [-1, -2]; the dims list is compared literally.

Breaks the lesson's "a weight is 2-D, so compare the dims modulo 2 (each dim may be counted either way: `[1, -2]` and
`[-1, 0]` transpose too)": a hand-written `x @ w.permute(1, -2)` keeps `permute(w, [1, -2])` in every decomposed
graph, and is `F.linear(x, w)`."""
import torch

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = ("addmm_and_mm_fuse",)


def transposed(node):
    if not isinstance(node, torch.fx.Node) or node.op != "call_function":
        return None
    if node.target == torch.ops.aten.t.default:
        return node.args[0]
    if node.target == torch.ops.aten.permute.default and list(node.args[1]) in ([1, 0], [-1, -2]):
        return node.args[0]
    return None


_ref.transposed = transposed
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
