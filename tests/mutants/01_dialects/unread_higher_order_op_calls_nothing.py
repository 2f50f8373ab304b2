"""Mistake: a higher-order op node that no node reads is dead, so the subgraphs it calls are skipped (its own node
still counts, as neutral). Breaks "Every node counts, whether or not another node reads its result" and "Only the
subgraphs a higher-order op node calls are part of the program": a cond still in the graph calls both branches.
Blind round 6's w15_unread_hop_skipped.py."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("only_the_subgraphs_higher_order_ops_call_count",)


def graph_nodes(gm):
    for node in gm.graph.nodes:
        yield node
        if (node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator)
                and node.users):
            for arg in node.all_input_nodes:
                if arg.op == "get_attr":
                    subgraph = _ref._attribute(gm, arg.target)
                    if isinstance(subgraph, torch.fx.GraphModule):
                        yield from graph_nodes(subgraph)


# the reference's detect_dialect walks the module-level graph_nodes: point it at the mistake
_ref.graph_nodes = graph_nodes
detect_dialect = _ref.detect_dialect
