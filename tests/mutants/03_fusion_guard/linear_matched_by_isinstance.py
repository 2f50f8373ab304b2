"""Mistake: a call_module node is a Linear when `isinstance(module, nn.Linear)`. That also accepts
torch.ao.nn.qat.Linear, whose forward fake-quantizes the weight before the product: fused into
linear_gelu(x, weight, bias) it computes something else than the model does."""
import torch.nn as nn

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_linear_operands = _ref.linear_operands

KILLED_BY = (
    "gelu_subclass_fuses_only_with_gelu_forward",
    "linear_subclass_fuses_only_with_linear_forward",
    "no_state_between_calls",
)


def linear_operands(gm, node):
    if node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Linear):
        module = gm.get_submodule(node.target)
        bias = _ref.Param(f"{node.target}.bias") if module.bias is not None else None
        return _ref.LinearOperands(_ref.argument(node, 0, "input"), _ref.Param(f"{node.target}.weight"), bias)
    return _right_linear_operands(gm, node)


_ref.linear_operands = linear_operands
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
