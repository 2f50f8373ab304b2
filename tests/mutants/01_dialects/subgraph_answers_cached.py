"""Mistake: each subgraph's levels are remembered per subgraph object (in a global, weakly keyed by the
GraphModule) because "only the top graph gets rewritten"; the root graph is read on every call. A pass that rewrites
nodes inside a cond branch in place gets the old answer back. Breaks "Passes rewrite graphs in place — ..., inside
subgraphs too ... — so an answer cached per graph, per subgraph or per node goes stale". Blind round 3's
wrong_subgraph_cache.py."""
import weakref

import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("answers_for_the_graph_as_it_is_now",)
# subgraph -> [(node, dialect)] of it and its own subgraphs, as first seen
_SUBGRAPH_NODES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _levels(gm, is_root):
    if not is_root and gm in _SUBGRAPH_NODES:
        return _SUBGRAPH_NODES[gm]
    found = []
    for node in gm.graph.nodes:
        found.append((node, node_dialect(node)))
        if node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator):
            for arg in node.all_input_nodes:
                if arg.op == "get_attr":
                    sub = _ref._attribute(gm, arg.target)
                    if isinstance(sub, torch.fx.GraphModule):
                        found.extend(_levels(sub, False))
    if not is_root:
        _SUBGRAPH_NODES[gm] = found
    return found


def detect_dialect(gm):
    first = {}
    for node, dialect in _levels(gm, True):
        if dialect is not None:
            first.setdefault(dialect, node)
    aten_node = first.get(Dialect.ATEN) or first.get(Dialect.CORE_ATEN)
    high_node = first.get(Dialect.MODULE) or first.get(Dialect.TORCH)
    if aten_node is not None and high_node is not None:
        raise MixedDialectError(f"graph mixes levels: {_ref._describe(high_node)} but {_ref._describe(aten_node)}")
    for dialect in (Dialect.MODULE, Dialect.TORCH, Dialect.ATEN, Dialect.CORE_ATEN):
        if dialect in first:
            return dialect
    return Dialect.TORCH
