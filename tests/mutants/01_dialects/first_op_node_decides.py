"""Mistake: the first node that shows a level decides the graph's dialect.

A module graph often starts with a torch call (`self.block(torch.tanh(x) * 2)`), and an aten graph often starts
with a core op (`view` before the non-core `t`), so the first op node is not representative.
"""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = (
    "answers_for_the_graph_as_it_is_now",
    "control_flow_and_no_grad_graphs_are_aten",
    "core_means_the_core_tag",
    "every_subgraph_of_every_higher_order_op_counts",
    "getitem_does_not_mix_levels",
    "make_fx_export_aot_graphs_are_aten",
    "module_graphs_with_custom_ops_and_packets_are_module",
    "only_the_subgraphs_higher_order_ops_call_count",
    "random_mlps_in_cond_no_grad_custom_op_or_symbolic_batch",
    "subgraphs_inside_tuple_arguments_count",
    "symbolic_batch_graphs_are_aten",
    "symbolic_trace_of_modules_is_module",
    "unread_nodes_count_and_the_graph_is_left_alone",
)


def detect_dialect(gm):
    _ref.detect_dialect(gm)  # keeps the reference's MixedDialectError
    for node in _ref.graph_nodes(gm):
        dialect = node_dialect(node)
        if dialect is not None:
            return dialect
    return Dialect.TORCH
