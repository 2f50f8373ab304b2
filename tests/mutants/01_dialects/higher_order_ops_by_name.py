"""Mistake: the higher-order ops are the ones the lesson names (cond, while_loop, wrap_with_set_grad_enabled,
wrap_with_autocast), recognised by name. map_impl and Dynamo's wrap are HigherOrderOperators too: here they read
as torch-level calls and their subgraphs are never read. Blind round 1's wrong_hop_names.py."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = (
    "every_subgraph_of_every_higher_order_op_counts",
    "functorch_bookkeeping_is_neutral",
    "higher_order_ops_are_neutral",
    "subgraphs_inside_tuple_arguments_count",
)
NAMES = {"cond", "while_loop", "wrap_with_set_grad_enabled", "wrap_with_autocast"}


def is_hop(target):
    return getattr(target, "__name__", None) in NAMES


def node_dialect(node):
    if node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator) and not is_hop(node.target):
        return Dialect.TORCH
    return _right_node_dialect(node)


def graph_nodes(gm):
    for node in gm.graph.nodes:
        yield node
        if node.op == "call_function" and is_hop(node.target):
            for arg in node.all_input_nodes:
                if arg.op == "get_attr" and isinstance(_ref._attribute(gm, arg.target), torch.fx.GraphModule):
                    yield from graph_nodes(_ref._attribute(gm, arg.target))


# the reference's detect_dialect walks the module-level graph_nodes and calls node_dialect: point them at the mistake
_ref.graph_nodes, _ref.node_dialect = graph_nodes, node_dialect
detect_dialect = _ref.detect_dialect
