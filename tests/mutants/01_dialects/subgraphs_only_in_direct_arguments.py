"""Mistake: a higher-order op's subgraphs are among its direct positional arguments only, so a get_attr inside a
tuple argument (or a keyword argument) is never followed: flex_attention's mask_mod subgraph, which sits inside its
block-mask tuple, is not read. Blind round 2's wrong_toplevel_args.py."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("subgraphs_inside_tuple_arguments_count",)


def graph_nodes(gm):
    for node in gm.graph.nodes:
        yield node
        if node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator):
            for arg in node.args:
                if isinstance(arg, torch.fx.Node) and arg.op == "get_attr":
                    subgraph = _ref._attribute(gm, arg.target)
                    if isinstance(subgraph, torch.fx.GraphModule):
                        yield from graph_nodes(subgraph)


# the reference's detect_dialect walks the module-level graph_nodes: point it at the mistake
_ref.graph_nodes = graph_nodes
detect_dialect = _ref.detect_dialect
