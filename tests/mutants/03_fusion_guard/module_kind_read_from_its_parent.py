"""Mistake: a module subclass is its base's kind when its parent is the base and its own class body defines no
forward: the rule read one level deep. A subclass of a subclass that keeps the base's forward (KeepsKeepsGELU,
KeepsKeepsLinear), or assigns it back below an overriding parent (RestoresGELU, RestoresLinear), is left unfused
although it is a GELU (a Linear). The lesson: "`type(module).forward is nn.Linear.forward`" -- read through the
whole chain of bases (blind round k03-r5)."""
import torch.nn as nn

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_gelu_approximate, _right_linear_operands = _ref.gelu_approximate, _ref.linear_operands

KILLED_BY = ("gelu_subclass_fuses_only_with_gelu_forward",)


def _keeps_forward(module, base):
    cls = type(module)
    return cls is base or (cls.__bases__[0] is base and "forward" not in cls.__dict__)


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
