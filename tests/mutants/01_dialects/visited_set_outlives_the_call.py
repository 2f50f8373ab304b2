"""Mistake: the subgraph walk skips GraphModules it has already visited, and keeps that set in a default argument,
so it outlives the call: asked a second time about the same graph, detect_dialect skips every subgraph. Blind
round 2's wrong_visited_default.py."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = (
    "every_subgraph_of_every_higher_order_op_counts",
    "only_the_subgraphs_higher_order_ops_call_count",
    "subgraphs_inside_tuple_arguments_count",
)


def graph_nodes(gm, _visited=set()):
    for node in gm.graph.nodes:
        yield node
        if node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator):
            for arg in node.all_input_nodes:
                if arg.op == "get_attr":
                    subgraph = _ref._attribute(gm, arg.target)
                    if isinstance(subgraph, torch.fx.GraphModule) and id(subgraph) not in _visited:
                        _visited.add(id(subgraph))
                        yield from graph_nodes(subgraph)


# the reference's detect_dialect walks the module-level graph_nodes: point it at the mistake
_ref.graph_nodes = graph_nodes
detect_dialect = _ref.detect_dialect
