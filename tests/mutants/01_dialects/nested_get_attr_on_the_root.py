"""Mistake: every get_attr target, a nested subgraph's too, is looked up on the root GraphModule; a target the root
lacks is skipped, and a subgraph already read is not read again. Inside a cond's true branch, an inner cond's
`true_graph_0` is an attribute of that branch, not of the root. Blind round 1's wrong_root_lookup.py."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("every_subgraph_of_every_higher_order_op_counts",)


def graph_nodes(gm, root=None, done=None):
    root = gm if root is None else root
    done = {id(root)} if done is None else done
    for node in gm.graph.nodes:
        yield node
        if node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator):
            for arg in node.all_input_nodes:
                if arg.op == "get_attr":
                    sub = getattr(root, arg.target, None)
                    if isinstance(sub, torch.fx.GraphModule) and id(sub) not in done:
                        done.add(id(sub))
                        yield from graph_nodes(sub, root, done)


# the reference's detect_dialect walks the module-level graph_nodes: point it at the mistake
_ref.graph_nodes = graph_nodes
detect_dialect = _ref.detect_dialect
