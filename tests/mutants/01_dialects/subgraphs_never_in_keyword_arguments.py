"""Mistake: a higher-order op's subgraphs sit among its positional arguments, however nested in tuples and lists,
but never in its keyword arguments, so a cond a pass rewrote to cond(pred, true_fn=..., false_fn=..., operands=...)
calls no subgraph. Breaks "They can sit anywhere among its arguments: directly, inside tuples and lists, or as
keyword arguments". Blind round 6's w02_kwargs.py."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("subgraphs_inside_tuple_arguments_count",)


def _positional_nodes(value):
    if isinstance(value, torch.fx.Node):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _positional_nodes(item)


def graph_nodes(gm):
    for node in gm.graph.nodes:
        yield node
        if node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator):
            for arg in _positional_nodes(node.args):
                if arg.op == "get_attr":
                    subgraph = _ref._attribute(gm, arg.target)
                    if isinstance(subgraph, torch.fx.GraphModule):
                        yield from graph_nodes(subgraph)


# the reference's detect_dialect walks the module-level graph_nodes: point it at the mistake
_ref.graph_nodes = graph_nodes
detect_dialect = _ref.detect_dialect
