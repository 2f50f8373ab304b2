"""Mistake: higher-order ops are neutral, but the subgraphs they call are never looked at, so a graph whose
Linear sits inside a torch.cond branch or a no_grad block reads as core ATEN (or as an empty graph)."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = (
    "answers_for_the_graph_as_it_is_now",
    "control_flow_and_no_grad_graphs_are_aten",
    "every_subgraph_of_every_higher_order_op_counts",
    "mixed_levels_across_subgraphs_raise_mixed",
    "only_the_subgraphs_higher_order_ops_call_count",
    "random_mlps_in_cond_no_grad_custom_op_or_symbolic_batch",
    "subgraphs_inside_tuple_arguments_count",
    "unread_nodes_count_and_the_graph_is_left_alone",
)


def graph_nodes(gm):
    return iter(gm.graph.nodes)


# the reference's detect_dialect walks the module-level graph_nodes: point it at the mistake
_ref.graph_nodes = graph_nodes
detect_dialect = _ref.detect_dialect
