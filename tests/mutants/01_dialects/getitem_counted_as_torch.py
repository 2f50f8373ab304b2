"""Mistake: operator.getitem is treated as a torch-level call, so aten graphs that unpack
native_layer_norm or max outputs look mixed."""
import operator

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = (
    "answers_for_the_graph_as_it_is_now",
    "control_flow_and_no_grad_graphs_are_aten",
    "core_means_the_core_tag",
    "decomposed_exports_are_core_aten",
    "every_subgraph_of_every_higher_order_op_counts",
    "functorch_bookkeeping_is_neutral",
    "getitem_does_not_mix_levels",
    "getitem_is_neutral",
    "make_fx_export_aot_graphs_are_aten",
    "random_mlps_in_cond_no_grad_custom_op_or_symbolic_batch",
    "random_programs_in_every_capture_and_edit",
    "shape_arithmetic_is_neutral",
    "subgraphs_inside_tuple_arguments_count",
    "symbolic_batch_graphs_are_aten",
    "torch_and_aten_nodes_raise_mixed",
    "unread_nodes_count_and_the_graph_is_left_alone",
)


def node_dialect(node):
    if node.op == "call_function" and node.target is operator.getitem:
        return Dialect.TORCH
    return _right_node_dialect(node)



# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
