"""Mistake: every Linear is assumed to have a bias, so a Linear without one crashes the pass.

`x, w, b = node.args` works for Dynamo graphs (which pass bias=None explicitly) but F.linear(x, w) traced,
and aten.linear of nn.Linear(bias=False), have only two arguments; and a bias-free Linear decomposes to
aten.mm(x, t(w)), not aten.addmm(b, x, t(w)).
"""
import torch

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_linear_operands = _ref.linear_operands
aten = torch.ops.aten


def linear_operands(gm, node):
    if node.op == "call_function" and node.target in _ref.LINEAR_FUNCTIONS:
        x, weight, bias = node.args
        return _ref.LinearOperands(x, weight, bias)
    if node.op == "call_function" and node.target in (aten.addmm.default, aten.mm.default):
        bias, x, weight_t = node.args
        weight = _ref.transposed(weight_t)
        return _ref.LinearOperands(x, weight, bias) if weight is not None else None
    return _right_linear_operands(gm, node)


KILLED_BY = (
    "addmm_and_mm_fuse",
    "dead_nodes_are_removed",
    "export_graphs_fuse",
    "functional_symbolic_trace_fuses",
    "fused_nodes_record_their_value",
    "linear_output_with_two_users_is_not_fused",
    "linear_without_bias_fuses",
    "matrix_product_without_transposed_weight_is_not_a_linear",
    "no_state_between_calls",
    "pre_dispatch_graphs_fuse",
    "random_mlps_as_aten_graphs",
    "random_mlps_as_decomposed_graphs",
    "random_pair_programs",
    "reshape_that_regroups_or_no_input_view_keeps_its_shape",
    "reshaped_product_with_two_users_is_not_fused",
    "second_call_fuses_nothing",
    "unrelated_nodes_between_linear_and_gelu",
    "view_sandwich_fuses",
)

_ref.linear_operands = linear_operands
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
