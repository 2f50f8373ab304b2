"""Mistake: a higher-order op calls one subgraph, its first GraphModule get_attr argument; the rest are operands.
So cond's false branch is never read. Blind round 1's wrong_first_subgraph.py: export of
`torch.cond(p, relu(t) * 2, fc(t))` reads as CORE_ATEN instead of ATEN."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = (
    "answers_for_the_graph_as_it_is_now",
    "every_subgraph_of_every_higher_order_op_counts",
    "only_the_subgraphs_higher_order_ops_call_count",
    "subgraphs_inside_tuple_arguments_count",
)


def graph_nodes(gm):
    for node in gm.graph.nodes:
        yield node
        if node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator):
            for arg in node.all_input_nodes:
                if arg.op == "get_attr" and isinstance(_ref._attribute(gm, arg.target), torch.fx.GraphModule):
                    yield from graph_nodes(_ref._attribute(gm, arg.target))
                    break  # the subgraph found; the remaining arguments are its operands


# the reference's detect_dialect walks the module-level graph_nodes: point it at the mistake
_ref.graph_nodes = graph_nodes
detect_dialect = _ref.detect_dialect
