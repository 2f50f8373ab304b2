"""Mistake: a decomposed Linear's weight is "whatever goes through aten.t or aten.permute", without looking at the
permutation. permute(w, [0, 1]) keeps w as it is: mm(x, permute(w, [0, 1])) is x @ w, not the Linear x @ w.T."""
import torch

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = ("matrix_product_without_transposed_weight_is_not_a_linear",)


def transposed(node):
    if isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target in (
            torch.ops.aten.t.default, torch.ops.aten.permute.default):
        return node.args[0]
    return None


_ref.transposed = transposed
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
