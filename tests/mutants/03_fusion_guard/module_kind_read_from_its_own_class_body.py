"""Mistake: a module subclass keeps its base's forward when its own class body defines none ("forward" not in
type(module).__dict__). A child of an overriding class (InheritsShiftedGELU, InheritsScaledLinear) defines none and
inherits the override: fused as a plain GELU or Linear, and the numbers change; a child that assigns the base's
forward back (RestoresGELU) defines one and is left. The lesson: "a subclass that keeps `nn.Linear`'s forward:
`type(module).forward is nn.Linear.forward`" -- the forward the class ends up with (blind round k03-r5)."""
import torch.nn as nn

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_gelu_approximate, _right_linear_operands = _ref.gelu_approximate, _ref.linear_operands

KILLED_BY = ("gelu_subclass_fuses_only_with_gelu_forward",)


def _keeps_forward(module, base):
    return type(module) is base or (isinstance(module, base) and "forward" not in type(module).__dict__)


def gelu_approximate(gm, node):
    if node.op == "call_module":
        module = gm.get_submodule(node.target)
        return module.approximate if _keeps_forward(module, nn.GELU) else None
    return _right_gelu_approximate(gm, node)


def linear_operands(gm, node):
    if node.op == "call_module":
        module = gm.get_submodule(node.target)
        if not _keeps_forward(module, nn.Linear):
            return None
        bias = _ref.Param(f"{node.target}.bias") if module.bias is not None else None
        return _ref.LinearOperands(_ref.argument(node, 0, "input"), _ref.Param(f"{node.target}.weight"), bias)
    return _right_linear_operands(gm, node)


_ref.gelu_approximate, _ref.linear_operands = gelu_approximate, linear_operands
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
