"""Mistake: every HigherOrderOperator is neutral, but only the higher-order ops the lesson names (cond, while_loop,
wrap_with_set_grad_enabled, wrap_with_autocast, map_impl, wrap) are walked into; scan's combine subgraph is never
read. Blind round 2's wrong_hop_list.py."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = (
    "every_subgraph_of_every_higher_order_op_counts",
    "subgraphs_inside_tuple_arguments_count",
)

NAMED = frozenset({"cond", "while_loop", "wrap_with_set_grad_enabled", "wrap_with_autocast", "map_impl", "wrap"})


def graph_nodes(gm):
    for node in gm.graph.nodes:
        yield node
        if node.op == "call_function" and getattr(node.target, "__name__", None) in NAMED:
            for arg in node.all_input_nodes:
                if arg.op == "get_attr":
                    subgraph = _ref._attribute(gm, arg.target)
                    if isinstance(subgraph, torch.fx.GraphModule):
                        yield from graph_nodes(subgraph)


# the reference's detect_dialect walks the module-level graph_nodes: point it at the mistake
_ref.graph_nodes = graph_nodes
detect_dialect = _ref.detect_dialect
