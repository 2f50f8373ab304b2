"""Mistake: subgraphs are one level deep: the graph's higher-order ops' subgraphs are read, but higher-order ops
inside those subgraphs are not followed. Blind round 1's wrong_one_level.py: a cond inside a cond's true branch,
aten.linear only in the inner false branch, reads as CORE_ATEN instead of ATEN."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("every_subgraph_of_every_higher_order_op_counts",)


def graph_nodes(gm, depth=0):
    for node in gm.graph.nodes:
        yield node
        if depth == 0 and node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator):
            for arg in node.all_input_nodes:
                if arg.op == "get_attr" and isinstance(_ref._attribute(gm, arg.target), torch.fx.GraphModule):
                    yield from graph_nodes(_ref._attribute(gm, arg.target), depth + 1)


# the reference's detect_dialect walks the module-level graph_nodes: point it at the mistake
_ref.graph_nodes = graph_nodes
detect_dialect = _ref.detect_dialect
