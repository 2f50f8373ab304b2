"""Mistake: state left behind between calls. Whether a call_module node is a Linear (a GELU) is decided once per
qualified name and memoised in a module-level dict, so the next graph's `fc0` (a ScaledLinear that overrides
forward) is taken for the previous graph's `fc0` (an nn.Linear), or the other way round. The lesson: "Keeps no state
between calls: each call decides from the graph it is given" (blind round k03-r4, wrong_cache_kind_by_target)."""
import torch.nn as nn

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_linear_operands = _ref.linear_operands
_right_gelu_approximate = _ref.gelu_approximate

KILLED_BY = (
    "gelu_subclass_fuses_only_with_gelu_forward",
    "linear_output_with_two_users_is_not_fused",
    "module_linear_then_functional_gelu",
    "no_state_between_calls",
    "random_mlps_as_module_graphs",
)

_IS_LINEAR: dict = {}
_IS_GELU: dict = {}


def linear_operands(gm, node):
    if node.op == "call_module":
        if node.target not in _IS_LINEAR:
            _IS_LINEAR[node.target] = type(gm.get_submodule(node.target)).forward is nn.Linear.forward
        if not _IS_LINEAR[node.target]:
            return None
        module = gm.get_submodule(node.target)
        bias = _ref.Param(f"{node.target}.bias") if module.bias is not None else None
        return _ref.LinearOperands(_ref.argument(node, 0, "input"), _ref.Param(f"{node.target}.weight"), bias)
    return _right_linear_operands(gm, node)


def gelu_approximate(gm, node):
    if node.op == "call_module":
        if node.target not in _IS_GELU:
            _IS_GELU[node.target] = type(gm.get_submodule(node.target)).forward is nn.GELU.forward
        return gm.get_submodule(node.target).approximate if _IS_GELU[node.target] else None
    return _right_gelu_approximate(gm, node)


_ref.linear_operands = linear_operands
_ref.gelu_approximate = gelu_approximate
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
