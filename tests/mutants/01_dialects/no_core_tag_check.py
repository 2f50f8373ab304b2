"""Mistake: every OpOverload is ATEN; the torch.Tag.core check is missing, so CORE_ATEN never appears."""

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = (
    "answers_for_the_graph_as_it_is_now",
    "decomposed_exports_are_core_aten",
    "dialect_is_about_content_not_tool",
    "every_subgraph_of_every_higher_order_op_counts",
    "functorch_bookkeeping_is_neutral",
    "only_the_subgraphs_higher_order_ops_call_count",
    "overloads_split_by_core_tag",
    "random_mlps_in_cond_no_grad_custom_op_or_symbolic_batch",
    "random_mlps_in_every_capture",
    "subgraphs_inside_tuple_arguments_count",
)


def node_dialect(node):
    dialect = _right_node_dialect(node)
    return Dialect.ATEN if dialect == Dialect.CORE_ATEN else dialect



# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
