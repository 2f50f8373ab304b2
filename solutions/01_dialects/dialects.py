"""Reference solution for kata 1: which dialect is an FX graph written in?"""
from __future__ import annotations

import enum
import functools
import operator
from typing import Iterator

import torch
import torch.fx


class Dialect(str, enum.Enum):
    MODULE = "module"
    TORCH = "torch"
    ATEN = "aten"
    CORE_ATEN = "core_aten"


class MixedDialectError(ValueError):
    """Raised when one graph holds aten-level nodes next to module- or torch-level ones."""


# PyTorch's own operator sets: ATen, and Prims below it (torch.compiler_ir). Any other namespace is a custom op.
ATEN_NAMESPACES = frozenset({"aten", "prims"})
# export's `ep.module()` adds this call_module to check its inputs: bookkeeping, not the model.
GUARDS_MODULE = "_guards_fn"
# Global-mode switches that make_fx(pre_dispatch=True) and Dynamo record for `torch.no_grad()` and
# `torch.autocast` blocks: they change how the ops after them run, and compute nothing themselves.
MODE_SWITCHES = (
    torch._C._set_grad_enabled,
    torch.amp.autocast_mode._enter_autocast,
    torch.amp.autocast_mode._exit_autocast,
)
# functorch's transform bookkeeping: torch.export records torch.vmap (create_block_mask calls it) and torch.func.jvp
# as calls to this module's functions (_add_batch_dim, _vmap_increment_nesting, _make_dual, ...) beside the aten ops
# they wrap. They wrap and unwrap tensors and compute nothing.
FUNCTORCH_BOOKKEEPING = "torch._functorch.predispatch"
# What a shape computation records as its value: sizes are SymInts when they are symbolic, plain numbers when not.
SHAPE_VALUES = (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)

LEVEL_NAMES = {Dialect.MODULE: "module", Dialect.TORCH: "torch", Dialect.ATEN: "aten", Dialect.CORE_ATEN: "aten"}


def _namespace(op: torch._ops.OpOverload | torch._ops.OpOverloadPacket) -> str:
    """'aten' for aten.addmm.default and for the packet aten.relu; 'kata' for kata.linear_gelu."""
    return op._qualified_op_name.split("::")[0] if isinstance(op, torch._ops.OpOverloadPacket) else op.namespace


def _recorded_value(node: torch.fx.Node) -> object:
    """The value the capture recorded for the node: meta["val"] (export, make_fx, aot_autograd) or, when the node
    has no "val" key, meta["example_value"] (Dynamo); None when it recorded none (symbolic_trace records nothing).
    A "val" that is present decides even when it is None."""
    for key in ("val", "example_value"):
        if key in node.meta:
            return node.meta[key]
    return None


def _is_structure(node: torch.fx.Node) -> bool:
    """A call_function that says nothing about the level: it unpacks, switches a mode, keeps a functorch transform's
    books or calls subgraphs."""
    target = node.target
    if target is operator.getitem or any(target is switch for switch in MODE_SWITCHES):
        return True
    if getattr(target, "__module__", None) == FUNCTORCH_BOOKKEEPING:
        return True  # vmap's batch-dim calls, jvp's dual-tensor calls: bookkeeping around the ops they wrap
    return isinstance(target, torch._ops.HigherOrderOperator)  # cond, scan, ...: the ops are in its subgraphs


def node_dialect(node: torch.fx.Node) -> Dialect | None:
    """The dialect one node belongs to, or None when the node is neutral.

    Neutral: placeholder, get_attr, output, export's `_guards_fn` call_module, shape arithmetic (a call_function
    that records a size, whatever its target: aten.sym_size.int too), custom ops (any namespace but aten/prims),
    and the structure call_functions (getitem, higher-order ops, mode switches, functorch's transform bookkeeping).
    """
    if node.op == "call_module":
        return None if node.target == GUARDS_MODULE else Dialect.MODULE
    if node.op == "call_method":
        return Dialect.TORCH
    if node.op != "call_function":
        return None
    if isinstance(_recorded_value(node), SHAPE_VALUES):
        return None  # shape arithmetic, whatever the target: operator.mul on SymInts, aten.sym_size.int, ...
    target = node.target
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        if _namespace(target) not in ATEN_NAMESPACES:
            return None  # a custom op: torch-level code and every lowering keep it as it is
        if isinstance(target, torch._ops.OpOverloadPacket):
            return Dialect.TORCH  # torch.ops.aten.relu(x): a Python call that picks its overload when it runs
        return Dialect.CORE_ATEN if torch.Tag.core in target.tags else Dialect.ATEN
    return None if _is_structure(node) else Dialect.TORCH


def _attribute(gm: torch.fx.GraphModule, qualified_name: str) -> object:
    return functools.reduce(getattr, qualified_name.split("."), gm)


def graph_nodes(gm: torch.fx.GraphModule) -> Iterator[torch.fx.Node]:
    """Every node of `gm`, each higher-order op node followed by the nodes of the subgraphs it calls (its get_attr
    arguments that name GraphModules), recursively."""
    for node in gm.graph.nodes:
        yield node
        if node.op == "call_function" and isinstance(node.target, torch._ops.HigherOrderOperator):
            for arg in node.all_input_nodes:
                if arg.op == "get_attr":
                    subgraph = _attribute(gm, arg.target)
                    if isinstance(subgraph, torch.fx.GraphModule):
                        yield from graph_nodes(subgraph)


def _describe(node: torch.fx.Node) -> str:
    target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", node.target)
    if isinstance(node.target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        target = str(node.target)
    return f"node {node.name!r} ({node.op} {target}) is {LEVEL_NAMES[node_dialect(node)]}-level"


def detect_dialect(gm: torch.fx.GraphModule) -> Dialect:
    """The dialect of a whole graph, subgraphs of higher-order ops included.

    MODULE if any node calls a module; else TORCH if any node is torch-level; else ATEN if any aten-level op is
    not core; else CORE_ATEN if there is an aten-level op at all; else TORCH (nothing says otherwise). Aten-level
    nodes beside module- or torch-level nodes raise MixedDialectError naming one node of each, quoted.
    """
    first: dict[Dialect, torch.fx.Node] = {}
    for node in graph_nodes(gm):
        dialect = node_dialect(node)
        if dialect is not None:
            first.setdefault(dialect, node)
    aten_node = first.get(Dialect.ATEN) or first.get(Dialect.CORE_ATEN)
    high_node = first.get(Dialect.MODULE) or first.get(Dialect.TORCH)
    if aten_node is not None and high_node is not None:
        raise MixedDialectError(f"graph mixes levels: {_describe(high_node)} but {_describe(aten_node)}")
    for dialect in (Dialect.MODULE, Dialect.TORCH, Dialect.ATEN, Dialect.CORE_ATEN):
        if dialect in first:
            return dialect
    return Dialect.TORCH
