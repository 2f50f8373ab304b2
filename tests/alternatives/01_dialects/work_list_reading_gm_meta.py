"""A different correct attempt at kata 1, written in blind round 6 (2026-12-07) from the lesson alone (the round's
correct.py, plus its correct2_reads_gm_meta.py's one line).

- node_dialect classifies through a dict keyed by node.op; detect_dialect walks the program with a deque work list,
  finds a higher-order op's subgraphs with torch.fx.node.map_aggregate over args and kwargs, and fetches each with
  operator.attrgetter on the GraphModule that holds the get_attr node.
- Its error message reads gm.meta (export records `inline_constraints` there). Reading is allowed; the checker's
  copy of a graph in the process running the attempt once had no `meta` at all, so this attempt failed 22 checks
  with AttributeError.
"""
from __future__ import annotations

import enum
import operator
from collections import deque

import torch
import torch.fx
from torch.fx.node import map_aggregate


class Dialect(str, enum.Enum):
    MODULE = "module"
    TORCH = "torch"
    ATEN = "aten"
    CORE_ATEN = "core_aten"


class MixedDialectError(ValueError):
    """Raised when one graph holds aten-level nodes next to module- or torch-level ones."""


_SIZE_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)
_LOWERED_NS = frozenset({"aten", "prims"})
_MODE_SWITCHES = (torch._C._set_grad_enabled,
                  torch.amp.autocast_mode._enter_autocast,
                  torch.amp.autocast_mode._exit_autocast)
_MISSING = object()


def _recorded(node):
    meta = node.meta
    if "val" in meta:
        return meta["val"]
    return meta.get("example_value", _MISSING)


def _op_namespace(target):
    if isinstance(target, torch._ops.OpOverload):
        return target.namespace
    if isinstance(target, torch._ops.OpOverloadPacket):
        return target._qualified_op_name.partition("::")[0]
    return None


def _call_function(node):
    target = node.target
    if isinstance(_recorded(node), _SIZE_TYPES):
        return None
    ns = _op_namespace(target)
    if ns is not None:
        if ns not in _LOWERED_NS:
            return None
        if isinstance(target, torch._ops.OpOverloadPacket):
            return Dialect.TORCH
        return Dialect.CORE_ATEN if torch.Tag.core in target.tags else Dialect.ATEN
    if target is operator.getitem or isinstance(target, torch._ops.HigherOrderOperator):
        return None
    if any(target is s for s in _MODE_SWITCHES):
        return None
    if getattr(target, "__module__", None) == "torch._functorch.predispatch":
        return None
    return Dialect.TORCH


_BY_OP = {
    "placeholder": lambda n: None,
    "get_attr": lambda n: None,
    "output": lambda n: None,
    "call_module": lambda n: None if n.target == "_guards_fn" else Dialect.MODULE,
    "call_method": lambda n: Dialect.TORCH,
    "call_function": _call_function,
}


def node_dialect(node: torch.fx.Node) -> Dialect | None:
    return _BY_OP[node.op](node)


def _called_subgraphs(owner, node):
    """GraphModules the higher-order op `node` calls, found by walking args/kwargs with map_aggregate."""
    found = []

    def visit(a):
        if isinstance(a, torch.fx.Node) and a.op == "get_attr":
            obj = operator.attrgetter(a.target)(owner)
            if isinstance(obj, torch.fx.GraphModule):
                found.append(obj)
        return a

    map_aggregate(node.args, visit)
    map_aggregate(node.kwargs, visit)
    return found


def detect_dialect(gm: torch.fx.GraphModule) -> Dialect:
    first: dict[Dialect, torch.fx.Node] = {}
    work = deque([gm])
    while work:
        owner = work.popleft()
        for node in owner.graph.nodes:
            d = node_dialect(node)
            if d is not None:
                first.setdefault(d, node)
            if node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator):
                work.extend(_called_subgraphs(owner, node))
    origin = "export" if "inline_constraints" in gm.meta else "some capture"
    high = first.get(Dialect.MODULE) or first.get(Dialect.TORCH)
    low = first.get(Dialect.ATEN) or first.get(Dialect.CORE_ATEN)
    if high is not None and low is not None:
        raise MixedDialectError(
            f"graph ({origin}) mixes levels: node {high.name!r} ({high.op} {high.target}) is "
            f"{node_dialect(high).value}-level but node {low.name!r} ({low.target}) is aten-level")
    for d in (Dialect.MODULE, Dialect.TORCH, Dialect.ATEN, Dialect.CORE_ATEN):
        if d in first:
            return d
    return Dialect.TORCH
