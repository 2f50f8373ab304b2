"""A different correct attempt at kata 1, written in blind round 1 (2026-12-05) from the lesson alone
(/work/blind/k01-r1/correct_table.py).

- node_dialect walks a tuple of (test, answer) rows that copies the README table row by row: the first row
  that matches wins (the size row before the aten rows since issue 33 was settled, 2026-12-06).
- detect_dialect does not recurse: it walks the graphs breadth first from a work list, finds a higher-order op's
  get_attr arguments with torch.fx.node.map_arg over (args, kwargs), and fetches each with operator.attrgetter on
  the GraphModule that holds the node.
- It keeps the first node seen for each dialect and decides in Dialect declaration order.
"""
from __future__ import annotations

import enum
import operator

import torch
import torch.fx
from torch.fx.node import map_arg


class Dialect(str, enum.Enum):
    MODULE = "module"
    TORCH = "torch"
    ATEN = "aten"
    CORE_ATEN = "core_aten"


class MixedDialectError(ValueError):
    """Raised when one graph (its subgraphs included) holds aten-level nodes next to module- or torch-level
    ones. The message names one node of each level by node.name, in single quotes: 'block_0', 'max_dim'."""


_MODE_SWITCHES = (
    torch._C._set_grad_enabled,
    torch.amp.autocast_mode._enter_autocast,
    torch.amp.autocast_mode._exit_autocast,
)
_SIZE_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)
_OPS = (torch._ops.OpOverload, torch._ops.OpOverloadPacket)


def _namespace(target) -> str:
    if isinstance(target, torch._ops.OpOverload):
        return target.namespace
    return target._qualified_op_name.split("::")[0]


def _recorded(node):
    return node.meta["val"] if "val" in node.meta else node.meta.get("example_value")


def _aten_overload(node):
    return Dialect.CORE_ATEN if torch.Tag.core in node.target.tags else Dialect.ATEN


# (test, answer): the first row whose test holds decides. An answer may be a callable of the node.
_ROWS = (
    (lambda n: n.op in ("placeholder", "get_attr", "output"), None),
    (lambda n: n.op == "call_module" and n.target == "_guards_fn", None),
    (lambda n: n.op == "call_module", Dialect.MODULE),
    (lambda n: n.op == "call_method", Dialect.TORCH),
    (lambda n: isinstance(_recorded(n), _SIZE_TYPES), None),  # only call_functions are left here
    (lambda n: isinstance(n.target, _OPS) and _namespace(n.target) not in ("aten", "prims"), None),
    (lambda n: isinstance(n.target, torch._ops.OpOverloadPacket), Dialect.TORCH),
    (lambda n: isinstance(n.target, torch._ops.OpOverload), _aten_overload),
    (lambda n: n.target is operator.getitem, None),
    (lambda n: isinstance(n.target, torch._ops.HigherOrderOperator), None),
    (lambda n: any(n.target is f for f in _MODE_SWITCHES), None),
    (lambda n: getattr(n.target, "__module__", "") == "torch._functorch.predispatch", None),  # functorch's books
    (lambda n: True, Dialect.TORCH),
)


def node_dialect(node: torch.fx.Node) -> Dialect | None:
    for test, answer in _ROWS:
        if test(node):
            return answer(node) if callable(answer) else answer
    raise AssertionError("unreachable")


def _program(gm: torch.fx.GraphModule):
    """Every node of gm and of the subgraphs its higher-order ops call, as (node) pairs, breadth first."""
    work = [gm]
    while work:
        module = work.pop(0)
        for node in module.graph.nodes:
            yield node
            if node.op != "call_function" or not isinstance(node.target, torch._ops.HigherOrderOperator):
                continue
            found: list[torch.fx.Node] = []
            map_arg((node.args, node.kwargs), lambda a: found.append(a) or a)
            for arg in found:
                if arg.op != "get_attr":
                    continue
                sub = operator.attrgetter(arg.target)(module)
                if isinstance(sub, torch.fx.GraphModule):
                    work.append(sub)


def detect_dialect(gm: torch.fx.GraphModule) -> Dialect:
    seen: dict[Dialect, torch.fx.Node] = {}
    for node in _program(gm):
        d = node_dialect(node)
        if d is not None:
            seen.setdefault(d, node)
    high = seen.get(Dialect.MODULE) or seen.get(Dialect.TORCH)
    low = seen.get(Dialect.ATEN) or seen.get(Dialect.CORE_ATEN)
    if high is not None and low is not None:
        raise MixedDialectError(
            f"graph mixes levels: node {high.name!r} ({high.op} {high.target}) is {node_dialect(high).value}-level"
            f" but node {low.name!r} ({low.target}) is aten-level")
    for d in Dialect:  # declaration order is MODULE, TORCH, ATEN, CORE_ATEN
        if d in seen:
            return d
    return Dialect.TORCH
