"""Mistake: a get_attr node that fetches a GraphModule makes that GraphModule a subgraph of the program, whether or
not a higher-order op node reads it. A pass that erased a cond without eliminate_dead_code() leaves such get_attr
nodes with no reader, and their branches are then read as if they ran. Blind round 2's wrong_leftover_getattr.py."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("only_the_subgraphs_higher_order_ops_call_count",)


def graph_nodes(gm):
    for node in gm.graph.nodes:
        yield node
        if node.op == "get_attr":
            subgraph = _ref._attribute(gm, node.target)
            if isinstance(subgraph, torch.fx.GraphModule):
                yield from graph_nodes(subgraph)


# the reference's detect_dialect walks the module-level graph_nodes: point it at the mistake
_ref.graph_nodes = graph_nodes
detect_dialect = _ref.detect_dialect
