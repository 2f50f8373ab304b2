"""Mistake: in the matcher, any GELU input that is not a call_function is taken for a call_module and looked up
with gm.get_submodule(node.target). A GELU of the graph's input reads a placeholder: get_submodule('x') raises,
and the whole pass fails on a graph that merely contains a bystander GELU."""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_linear_operands = _ref.linear_operands

KILLED_BY = (
    "nodes_outside_matches_untouched",
    "report_after_a_pass_leaves_out_the_fused_pairs",
    "report_gives_each_gelu_its_reason",
)


def linear_operands(gm, node):
    if node.op != "call_function":
        module = gm.get_submodule(node.target)
        if type(module).forward is not _ref.nn.Linear.forward:
            return None
        bias = _ref.Param(f"{node.target}.bias") if module.bias is not None else None
        return _ref.LinearOperands(_ref.argument(node, 0, "input"), _ref.Param(f"{node.target}.weight"), bias)
    return _right_linear_operands(gm, node)


_ref.linear_operands = linear_operands
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
