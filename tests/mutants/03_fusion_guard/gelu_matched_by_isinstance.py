"""Mistake: the subclass rule is applied to the Linear only; any `isinstance(module, nn.GELU)` is taken for a GELU.
A user's ShiftedGELU(nn.GELU) whose forward computes gelu(x - 0.5) is then fused as a plain GELU of the Linear's
output, and the numbers change. Such a call_module node appears when a custom fx.Tracer keeps user subclasses
whole (is_leaf_module), as the check's capture does (blind round k03-r1, wrong_isinstance_gelu)."""
import torch.nn as nn

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_gelu_approximate = _ref.gelu_approximate

KILLED_BY = ("gelu_subclass_fuses_only_with_gelu_forward", "no_state_between_calls")


def gelu_approximate(gm, node):
    if node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.GELU):
        return gm.get_submodule(node.target).approximate
    return _right_gelu_approximate(gm, node)


_ref.gelu_approximate = gelu_approximate
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
