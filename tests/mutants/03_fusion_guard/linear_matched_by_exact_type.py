"""Mistake: a call_module node is a Linear only when `type(module) is nn.Linear`. torch's own
NonDynamicallyQuantizableLinear (nn.MultiheadAttention's out_proj) subclasses nn.Linear without changing
its forward: it is a Linear, and its pair with the GELU silently stays unfused."""
import torch.nn as nn

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_linear_operands = _ref.linear_operands

KILLED_BY = (
    "gelu_subclass_fuses_only_with_gelu_forward",
    "linear_subclass_fuses_only_with_linear_forward",
    "module_linear_then_functional_gelu",
)


def linear_operands(gm, node):
    if node.op == "call_module" and type(gm.get_submodule(node.target)) is not nn.Linear:
        return None
    return _right_linear_operands(gm, node)


_ref.linear_operands = linear_operands
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
