"""Mistake: any aten.addmm(b, x, t(w)) is taken for a Linear, whatever its beta and alpha. A hand-written
torch.addmm(b, x, w.t(), beta=0.5) computes 0.5 * b + x @ w.T; fused into linear_gelu(x, w, b) it loses the scaling."""
import torch

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_linear_operands = _ref.linear_operands

KILLED_BY = ("matrix_product_without_transposed_weight_is_not_a_linear",)


def linear_operands(gm, node):
    if node.op == "call_function" and node.target == torch.ops.aten.addmm.default:
        bias, x, weight_t = node.args
        weight = _ref.transposed(weight_t)
        return _ref.LinearOperands(x, weight, bias) if weight is not None else None
    return _right_linear_operands(gm, node)


_ref.linear_operands = linear_operands
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
