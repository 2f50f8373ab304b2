"""Mistake: the top-level graph and each subgraph of a higher-order op are checked for mixing separately, so a
torch-level graph whose cond branch calls an aten overload passes, although it is one program."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("mixed_levels_across_subgraphs_raise_mixed",)
_ORDER = (Dialect.MODULE, Dialect.TORCH, Dialect.ATEN, Dialect.CORE_ATEN)


def _one_graph(gm):
    found = {node_dialect(n) for n in gm.graph.nodes} - {None}
    if found & {Dialect.ATEN, Dialect.CORE_ATEN} and found & {Dialect.MODULE, Dialect.TORCH}:
        raise MixedDialectError(f"graph mixes levels: {sorted(n.name for n in gm.graph.nodes if node_dialect(n))}")
    found |= {d for n in gm.graph.nodes for d in _subgraph_levels(gm, n)}
    return found


def _subgraph_levels(gm, node):
    if node.op != "call_function" or not isinstance(node.target, torch._ops.HigherOrderOperator):
        return set()
    levels = set()
    for arg in node.all_input_nodes:
        if arg.op == "get_attr" and isinstance(_ref._attribute(gm, arg.target), torch.fx.GraphModule):
            levels |= _one_graph(_ref._attribute(gm, arg.target))
    return levels


def detect_dialect(gm):
    found = _one_graph(gm)
    return next((d for d in _ORDER if d in found), Dialect.TORCH)
