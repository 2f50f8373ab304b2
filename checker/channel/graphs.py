"""Graphs as data: the worker describes a graph it changed, the trusted side rebuilds it from the description.

A pass such as kata 3's `fuse_linear_gelu(gm)` rewrites its graph in place, in the worker. The checks need
the rewritten graph on their side, to count its nodes and to run it against eager with their own, unpatched
torch. The worker never sends the graph object: it sends each node's name, op, target *as a name*, and
arguments as data. The trusted side resolves every target against what it allows (ATen and custom ops in
`torch.ops`, functions torch dispatches, `operator`, Tensor methods by name, the module's own submodules and
attributes) and builds a fresh `torch.fx.Graph`, so nothing the attempt defined ever runs on the trusted side.

A node the trusted side cannot rebuild (a call to a function the attempt defined, a module it added) turns the
whole rebuild into a `GraphRebuildError` that names the node: the check reports it to the learner.
"""
from __future__ import annotations

import builtins
import importlib
import hashlib
import math
import operator
from typing import Any

import torch
import torch.fx
from torch.fx.node import Node, _get_qualified_name

from checker.channel.wire import TAG, to_plain

# --- worker side: describe ------------------------------------------------------------------------------


def target_name(target: Any) -> str:
    """The dotted name of a call_function target ("torch.ops.aten.addmm.default", "_operator.add")."""
    try:
        return _get_qualified_name(target)
    except Exception:  # noqa: BLE001 - an object FX itself could not name
        return f"<{type(target).__name__} {getattr(target, '__qualname__', repr(target))[:80]}>"


def _describe_argument(value: Any) -> Any:
    if isinstance(value, Node):
        return {TAG: "node", "name": value.name}
    if isinstance(value, (list, tuple)):
        return {TAG: "tuple" if isinstance(value, tuple) else "list", "items": [_describe_argument(v) for v in value]}
    if isinstance(value, dict):
        return {TAG: "dict", "items": [[_describe_argument(k), _describe_argument(v)] for k, v in value.items()]}
    if isinstance(value, slice):
        return {TAG: "slice", "items": [_describe_argument(v) for v in (value.start, value.stop, value.step)]}
    if isinstance(value, (torch.memory_format, torch.layout)):
        return {TAG: "torch_attr", "name": str(value).removeprefix("torch.")}
    if value is Ellipsis:
        return {TAG: "ellipsis"}
    if callable(value) and not isinstance(value, torch.Tensor):
        return {TAG: "callable", "name": target_name(value)}
    return to_plain(value)


# The meta keys a capture records a node's value under (Dynamo: "example_value"). A rebuilt node keeps its value
# under "val" whatever the key was, and, where the worker's node had "example_value", its keys under VALUE_KEYS_META
# (kata 3 checks that a fused node of a Dynamo graph records its value where Dynamo does).
VALUE_KEYS = ("val", "example_value")
VALUE_KEYS_META = "wire_value_keys"


def _value_of(node: Node) -> Any:
    value = node.meta.get("val", node.meta.get("example_value"))
    try:
        return to_plain(value) if isinstance(value, (torch.Tensor, int, float, bool, torch.SymInt)) else None
    except Exception:  # noqa: BLE001 - meta that cannot be described is left out
        return None


def describe_graph(gm: torch.fx.GraphModule, before: dict[str, int] | None = None) -> dict:
    """`gm` as plain data. `before` maps attribute paths to the id() of the tensor they held before the call:
    tensors at unchanged paths are not sent again (the trusted side has them), new or replaced ones are."""
    nodes, attrs = [], {}
    for node in gm.graph.nodes:
        target = node.target if node.op != "call_function" else target_name(node.target)
        nodes.append({"name": node.name, "op": node.op, "target": target,
                      "args": _describe_argument(node.args), "kwargs": _describe_argument(node.kwargs),
                      "value": _value_of(node), "value_keys": [k for k in VALUE_KEYS if k in node.meta]})
        if node.op == "get_attr":
            value = _attribute(gm, node.target)
            if isinstance(value, torch.Tensor) and (before is None or before.get(node.target) != id(value)):
                attrs[node.target] = to_plain(value)
    try:
        in_sync = gm.code == gm.graph.python_code(root_module="self").src
    except Exception:  # noqa: BLE001 - a graph that does not generate code is certainly not what forward runs
        in_sync = False
    modules = sorted(name for name, _ in gm.named_modules() if name)
    return {"nodes": nodes, "attrs": attrs, "modules": modules, "code_in_sync": in_sync}


def attribute_ids(gm: torch.fx.GraphModule) -> dict[str, int]:
    """id() of every parameter and buffer, by path (what describe_graph's `before` takes)."""
    found = {name: id(t) for name, t in gm.named_parameters(remove_duplicate=False)}
    found.update({name: id(t) for name, t in gm.named_buffers(remove_duplicate=False)})
    for name, value in vars(gm).items():
        if isinstance(value, torch.Tensor):
            found[name] = id(value)
    return found


def _attribute(gm: torch.nn.Module, path: str) -> Any:
    value: Any = gm
    for part in path.split("."):
        value = getattr(value, part, None)
        if value is None:
            return None
    return value


# --- trusted side: rebuild ------------------------------------------------------------------------------

class GraphRebuildError(AssertionError):
    """The worker's graph holds something the checks cannot rebuild on their side (named in the message).

    An AssertionError: the check fails with the message, as for any other graph that breaks the contract."""


# Modules whose functions may appear as call_function targets, and the test each resolved object must pass.
_FUNCTION_MODULES = ("torch", "torch.nn.functional", "torch._C._nn", "torch._C._VariableFunctions", "torch.functional",
                     "torch.fx.experimental.sym_node", "torch._refs", "math", "operator", "_operator")


def _allowed_functions() -> set[int]:
    """ids of the Python callables a rebuilt graph may call: every function torch dispatches on tensors
    (torch.*, torch.nn.functional.*, Tensor methods), the operator module, math, torch.sym_*."""
    allowed = {id(f) for f in torch.overrides.get_testing_overrides()}
    allowed |= {id(getattr(operator, name)) for name in dir(operator) if not name.startswith("__")}
    allowed |= {id(getattr(math, name)) for name in dir(math) if callable(getattr(math, name))}
    allowed |= {id(getattr(torch, name)) for name in dir(torch) if name.startswith("sym_")}
    allowed |= {id(builtins.getattr), id(torch._C._set_grad_enabled)}
    return allowed


_ALLOWED: set[int] | None = None


def resolve_function(name: str, where: str) -> Any:
    """The callable a description names, if the checks allow it; GraphRebuildError otherwise."""
    global _ALLOWED
    if name.startswith("torch.ops."):
        return _resolve_op(name, where)
    if "." not in name:
        if name == "getattr":
            return builtins.getattr
        raise GraphRebuildError(f"{where} calls {name}, which the checks cannot run")
    module_name, _, attr = name.rpartition(".")
    if module_name == "torch.Tensor":
        found = getattr(torch.Tensor, attr, None)
    elif module_name in _FUNCTION_MODULES:
        found = getattr(importlib.import_module(module_name), attr, None)
    else:
        found = None
    if _ALLOWED is None:
        _ALLOWED = _allowed_functions()
    if found is None or id(found) not in _ALLOWED:
        raise GraphRebuildError(f"{where} calls {name}: the checks only run torch, ATen and custom ops, "
                                f"operator and math functions in a rewritten graph, not code defined elsewhere")
    return found


def _resolve_op(name: str, where: str) -> Any:
    parts = name.split(".")[2:]
    if len(parts) < 2:
        raise GraphRebuildError(f"{where}: {name} is not an operator name")
    try:
        found: Any = getattr(torch.ops, parts[0])
        for part in parts[1:]:
            found = getattr(found, part)
    except (AttributeError, RuntimeError):
        raise GraphRebuildError(f"{where} calls {name}, an operator the checks do not have (is it registered "
                                f"only in your file? the fused op is torch.ops.kata.linear_gelu.default)") from None
    if not isinstance(found, (torch._ops.OpOverload, torch._ops.OpOverloadPacket, torch._ops.HigherOrderOperator)):
        raise GraphRebuildError(f"{where}: {name} is not an operator")
    return found


_TENSOR_METHODS = frozenset(name for name in dir(torch.Tensor) if not name.startswith("__") or name in
                            ("__getitem__", "__add__", "__mul__", "__matmul__", "__sub__", "__truediv__"))


def _rebuild_argument(value: Any, nodes: dict[str, Node], where: str) -> Any:
    from checker.channel.answers import from_plain  # plain tensors, dtypes, records

    if isinstance(value, dict) and TAG in value:
        kind = value[TAG]
        if kind == "node":
            if value["name"] not in nodes:
                raise GraphRebuildError(f"{where} reads node {value['name']!r}, which is not defined before it")
            return nodes[value["name"]]
        if kind in ("list", "tuple"):
            items = [_rebuild_argument(v, nodes, where) for v in value["items"]]
            return tuple(items) if kind == "tuple" else items
        if kind == "dict":
            return {_rebuild_argument(k, nodes, where): _rebuild_argument(v, nodes, where) for k, v in value["items"]}
        if kind == "slice":
            return slice(*(_rebuild_argument(v, nodes, where) for v in value["items"]))
        if kind == "torch_attr":
            found = getattr(torch, str(value["name"]), None)
            if not isinstance(found, (torch.memory_format, torch.layout)):
                raise GraphRebuildError(f"{where}: unknown torch constant {value['name']!r}")
            return found
        if kind == "ellipsis":
            return Ellipsis
        if kind == "callable":
            return resolve_function(str(value["name"]), where)
    return from_plain(value)


def rebuild_graph(gm: torch.fx.GraphModule, description: dict) -> torch.fx.Graph:
    """A new Graph owned by `gm`, built from the worker's description; GraphRebuildError names what cannot be."""
    from checker.channel.answers import from_plain

    graph = torch.fx.Graph(owning_module=gm)
    nodes: dict[str, Node] = {}
    modules = dict(gm.named_modules())
    for entry in description["nodes"]:
        name, op, target = str(entry["name"]), str(entry["op"]), entry["target"]
        where = f"node {name!r}"
        if op == "call_function":
            target = resolve_function(str(target), where)
        elif op == "call_module":
            if target not in modules:
                raise GraphRebuildError(f"{where} calls submodule {target!r}, which the original graph does not "
                                        f"have: a pass should call ops, not add modules")
        elif op == "call_method":
            if target not in _TENSOR_METHODS:
                raise GraphRebuildError(f"{where} calls method {target!r}, which is not a Tensor method")
        elif op == "get_attr":
            if _attribute(gm, str(target)) is None and target not in description["attrs"]:
                raise GraphRebuildError(f"{where} reads attribute {target!r}, which the graph module does not have")
        elif op not in ("placeholder", "output"):
            raise GraphRebuildError(f"{where} has op {op!r}")
        args = _rebuild_argument(entry["args"], nodes, where)
        kwargs = _rebuild_argument(entry["kwargs"], nodes, where)
        node = graph.create_node(op, target, tuple(args), dict(kwargs), name=name)
        if node.name != name:
            raise GraphRebuildError(f"two nodes are named {name!r}")
        value = entry.get("value")
        if value is not None:
            node.meta["val"] = _meta_value(from_plain(value))
        keys = tuple(str(k) for k in entry.get("value_keys", ()) if k in VALUE_KEYS)
        if "example_value" in keys:  # else the keys are what the rebuilt node has: "val" where there is a value
            node.meta[VALUE_KEYS_META] = keys
        nodes[name] = node
    return graph


def _meta_value(value: Any) -> Any:
    """A description of a node's value as something with .shape and .dtype (a meta tensor), or the number."""
    if isinstance(value, torch.Tensor):
        return torch.empty(value.shape, dtype=value.dtype, device="meta")
    spec = getattr(value, "shape", None)
    if spec is not None and all(isinstance(s, int) for s in spec):
        return torch.empty(tuple(spec), dtype=value.dtype, device="meta")
    return value


def apply_description(gm: torch.fx.GraphModule, description: dict) -> None:
    """Make the trusted `gm` what the worker's copy became: same nodes, new attributes installed, removed
    submodules removed, and `gm.forward` regenerated only if the worker's forward matched its graph (a pass
    that forgot `gm.recompile()` keeps running the old code here too)."""
    from checker.channel.answers import from_plain

    graph = rebuild_graph(gm, description)
    for path, value in description["attrs"].items():
        tensor = from_plain(value)
        if not isinstance(tensor, torch.Tensor):
            raise GraphRebuildError(f"attribute {path!r} is not a tensor")
        install_attribute(gm, str(path), tensor)
    kept = set(description["modules"])
    for name in sorted((n for n, _ in gm.named_modules() if n and n not in kept), key=len, reverse=True):
        parent, _, leaf = name.rpartition(".")
        owner = gm.get_submodule(parent) if parent else gm
        if hasattr(owner, leaf):
            delattr(owner, leaf)
    if description["code_in_sync"]:
        gm.graph = graph  # the setter recompiles
    else:
        gm._graph = graph  # noqa: SLF001 - keep the old forward, as the worker's module does
        graph.owning_module = gm


def graph_module_from(description: Any) -> torch.fx.GraphModule:
    """A new GraphModule built from a graph the worker described (its tensor attributes and its nodes), resolving
    targets against torch's own ops only; GraphRebuildError says why one cannot be built."""
    from checker.channel.answers import from_plain

    if not isinstance(description, dict):
        raise GraphRebuildError("what was sent is not a graph")
    root = torch.nn.Module()
    try:
        for path, value in description["attrs"].items():
            value = from_plain(value)
            if not isinstance(value, torch.Tensor):
                raise GraphRebuildError(f"attribute {path!r} is not a tensor")
            install_attribute(root, str(path), value)
        return torch.fx.GraphModule(root, rebuild_graph(root, description))
    except (KeyError, TypeError, ValueError) as error:
        raise GraphRebuildError(str(error)) from None


def install_attribute(gm: torch.nn.Module, path: str, tensor: torch.Tensor) -> None:
    parent_path, _, leaf = path.rpartition(".")
    owner = gm
    for part in parent_path.split(".") if parent_path else []:
        child = getattr(owner, part, None)
        if not isinstance(child, torch.nn.Module):
            child = torch.nn.Module()
            owner.add_module(part, child)
        owner = child
    if isinstance(getattr(owner, leaf, None), torch.nn.Parameter) or tensor.requires_grad:
        owner.register_parameter(leaf, torch.nn.Parameter(tensor, requires_grad=tensor.requires_grad))
    else:
        setattr(owner, leaf, tensor)


def graph_fingerprint(gm: Any) -> str:
    """Everything about a GraphModule the worker's copy must agree with: nodes, the code forward runs, and
    the identity and version of every tensor attribute (an in-place change of a weight bumps its version)."""
    digest = hashlib.sha1()
    for node in gm.graph.nodes:
        digest.update(f"{node.name}|{node.op}|{node.target!r}|{node.args!r}|{node.kwargs!r}\n".encode())
    digest.update(getattr(gm, "_code", "").encode())
    tensors = list(gm.named_parameters(remove_duplicate=False)) + list(gm.named_buffers(remove_duplicate=False))
    for name, tensor in tensors:
        digest.update(f"{name}:{id(tensor)}:{tensor._version}\n".encode())
    digest.update("|".join(n for n, _ in gm.named_modules()).encode())
    return digest.hexdigest()
