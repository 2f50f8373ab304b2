"""Mistake: a higher-order op (cond, wrap_with_set_grad_enabled) is not an OpOverload, so it is taken for a
torch-level call, and every exported graph with torch.cond or a no_grad block reads as mixed."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = (
    "answers_for_the_graph_as_it_is_now",
    "control_flow_and_no_grad_graphs_are_aten",
    "every_subgraph_of_every_higher_order_op_counts",
    "functorch_bookkeeping_is_neutral",
    "higher_order_ops_are_neutral",
    "only_the_subgraphs_higher_order_ops_call_count",
    "random_mlps_in_cond_no_grad_custom_op_or_symbolic_batch",
    "subgraphs_inside_tuple_arguments_count",
    "unread_nodes_count_and_the_graph_is_left_alone",
)


def node_dialect(node):
    if node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator):
        return Dialect.TORCH
    return _right_node_dialect(node)


# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
