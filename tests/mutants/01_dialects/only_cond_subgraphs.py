"""Mistake: only torch.cond's branches are looked into; the subgraph of export's wrap_with_set_grad_enabled (a
`torch.no_grad()` block) and of every other higher-order op is skipped."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = (
    "control_flow_and_no_grad_graphs_are_aten",
    "every_subgraph_of_every_higher_order_op_counts",
    "subgraphs_inside_tuple_arguments_count",
)


def graph_nodes(gm):
    for node in gm.graph.nodes:
        yield node
        if node.op == "call_function" and node.target is torch.ops.higher_order.cond:
            for arg in node.all_input_nodes:
                if arg.op == "get_attr" and isinstance(_ref._attribute(gm, arg.target), torch.fx.GraphModule):
                    yield from graph_nodes(_ref._attribute(gm, arg.target))


# the reference's detect_dialect walks the module-level graph_nodes: point it at the mistake
_ref.graph_nodes = graph_nodes
detect_dialect = _ref.detect_dialect
