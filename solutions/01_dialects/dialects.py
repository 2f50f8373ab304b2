"""Reference solution for kata 1: which dialect is an FX graph written in?"""
from __future__ import annotations

import enum
import operator

import torch
import torch.fx


class Dialect(str, enum.Enum):
    MODULE = "module"
    TORCH = "torch"
    ATEN = "aten"
    CORE_ATEN = "core_aten"


class MixedDialectError(ValueError):
    """Raised when one graph holds aten-level nodes next to module- or torch-level ones."""


# Nodes that appear in every dialect and say nothing about it.
NEUTRAL_FUNCTIONS = {operator.getitem}
# export's `ep.module()` adds this call_module to check input guards; it is bookkeeping, not the model.
NEUTRAL_MODULES = {"_guards_fn"}


def node_dialect(node: torch.fx.Node) -> Dialect | None:
    """The dialect one node belongs to, or None when the node is neutral.

    Neutral: placeholder, get_attr, output, operator.getitem, export's `_guards_fn` call_module.
    """
    if node.op == "call_module":
        return None if node.target in NEUTRAL_MODULES else Dialect.MODULE
    if node.op == "call_method":
        return Dialect.TORCH
    if node.op != "call_function":
        return None
    if node.target in NEUTRAL_FUNCTIONS:
        return None
    if isinstance(node.target, torch._ops.OpOverload):
        return Dialect.CORE_ATEN if torch.Tag.core in node.target.tags else Dialect.ATEN
    if isinstance(node.target, torch._ops.OpOverloadPacket):
        return Dialect.ATEN  # core-ness belongs to an overload; a packet is aten, never core
    return Dialect.TORCH


def detect_dialect(gm: torch.fx.GraphModule) -> Dialect:
    """The dialect of a whole graph.

    MODULE if any node calls a module; else TORCH if any node is torch-level; else ATEN if any OpOverload is
    not core; else CORE_ATEN. A graph with no dialect-bearing node is TORCH. Aten-level nodes beside module-
    or torch-level nodes raise MixedDialectError naming one node of each.
    """
    first: dict[Dialect, torch.fx.Node] = {}
    for node in gm.graph.nodes:
        dialect = node_dialect(node)
        if dialect is not None:
            first.setdefault(dialect, node)
    aten_node = first.get(Dialect.ATEN) or first.get(Dialect.CORE_ATEN)
    high_node = first.get(Dialect.MODULE) or first.get(Dialect.TORCH)
    if aten_node is not None and high_node is not None:
        raise MixedDialectError(
            f"graph mixes levels: node {high_node.name!r} ({high_node.op} {high_node.target}) is "
            f"{node_dialect(high_node).value}-level but node {aten_node.name!r} ({aten_node.target}) is aten-level"
        )
    for dialect in (Dialect.MODULE, Dialect.TORCH, Dialect.ATEN, Dialect.CORE_ATEN):
        if dialect in first:
            return dialect
    return Dialect.TORCH
