"""Mistake: `aten.transpose.int` on the weight is "the third spelling of the transpose", accepted without reading
its dims. `w.transpose(1, 1)` (or `(0, 0)`, `(-1, 1)`, `(0, -2)`: a dim swapped with itself, modulo 2) is `w` as it
is, so `mm(x, transpose.int(w, 1, 1))` is `x @ w`, no Linear. The lesson: "An `mm` whose second matrix is anything
else ... is some other matrix product, not a Linear: leave it"; "only transposes that move nothing: ... Read the
dims, as for `permute`" (blind round k03-r4, wrong_transpose_int_any_dims)."""
import torch

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_transposed = _ref.transposed

KILLED_BY = ("matrix_product_without_transposed_weight_is_not_a_linear",)


def transposed(node):
    if isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target == torch.ops.aten.transpose.int:
        return node.args[0]
    return _right_transposed(node)


_ref.transposed = transposed
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
