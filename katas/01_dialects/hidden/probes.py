"""Probes for kata 1's checks: the questions that must be asked where the attempt's code runs.

Most checks hand a captured graph to `node_dialect` / `detect_dialect`, and the graph travels to the attempt
as a copy. Two kinds of question cannot travel that way:

* graphs that cannot be copied: export's unlifted `ep.module()`, and make_fx graphs whose nodes hold the
  profiler's objects. `probe_graph` builds the graph where the attempt runs and asks there;
* a graph rewritten in place between two calls: across the channel the rewritten graph would arrive as a
  fresh copy, which hides an attempt that caches its answer per GraphModule or per node (and a rewrite inside
  a subgraph would not reach the worker's copy at all). `probe_rewrite_in_place` and `probe_rewrite_subgraphs`
  rewrite the very graph the attempt has already answered for;
* whether the attempt changed the graph it was asked about (inside subgraphs too: its nodes, their meta, the code
  and the forward that runs): `probe_unread_nodes`, `probe_retargeted`.

A probe returns the attempt's answers as plain data (see `answer`); the checks decide what is right.
"""
from __future__ import annotations

from types import ModuleType
from typing import Callable

import sys
from pathlib import Path

import torch
import torch.fx

from checker.kit import load_module
from katas.common import capture
from katas.common.zoo import ZOO

aten = torch.ops.aten


def build_graph(model_name: str, how: str) -> torch.fx.GraphModule:
    """The zoo model `model_name` captured `how`: a capture method, or "ep.module" for export's unlifted module."""
    model = ZOO[model_name]
    if how == "ep.module":
        return torch.export.export(model.build(), model.inputs()).module()
    return capture(model.build(), model.inputs(), how).gm


def answer(ask: Callable[[], object]) -> str | None:
    """What the attempt answered, as data: a dialect's value, None, or "MixedDialectError: <message>".
    NotImplementedError and any other exception propagate, so the checker reports them at the attempt's line."""
    try:
        got = ask()
    except ValueError as exc:
        if type(exc).__name__ != "MixedDialectError":
            raise
        return f"MixedDialectError: {exc}"
    return None if got is None else str(getattr(got, "value", got))


def probe_graph(attempt: ModuleType, model_name: str, how: str, node_names: list[str]) -> dict:
    """detect_dialect of the graph `build_graph` makes, and node_dialect of the nodes named `node_names`."""
    gm = build_graph(model_name, how)
    by_name = {node.name: node for node in gm.graph.nodes}
    return {
        "nodes": {name: answer(lambda: attempt.node_dialect(by_name[name])) for name in node_names},
        "graph": answer(lambda: attempt.detect_dialect(gm)),
    }


def _programs() -> ModuleType:
    """programs.py, loaded once per process (the checks load it under the same name)."""
    loaded = sys.modules.get("kata01_dialects_programs")
    return loaded if loaded is not None else load_module(Path(__file__).with_name("programs.py"),
                                                         "kata01_dialects_programs")


def rewrite_transposes(gm: torch.fx.GraphModule, recompile: bool = True) -> list[str]:
    """What a layout pass does: every aten.t(w) becomes aten.permute(w, [1, 0]), the same node rewritten in place,
    in `gm` and in every GraphModule it holds (subgraphs of higher-order ops too), then (if `recompile`) each
    GraphModule recompiles; without it `gm.code` still shows aten.t. Returns the rewritten nodes as
    "path/name" ("name" in `gm` itself)."""
    rewritten = []
    for path, graph_module in gm.named_modules():
        if not isinstance(graph_module, torch.fx.GraphModule):
            continue
        for node in graph_module.graph.nodes:
            if node.target == aten.t.default:
                node.target, node.args = aten.permute.default, (node.args[0], [1, 0])
                rewritten.append(f"{path}/{node.name}" if path else node.name)
        if recompile:
            graph_module.recompile()
    return rewritten


def probe_rewrite_in_place(attempt: ModuleType, model_name: str, recompile: bool = True) -> dict:
    """The attempt's answers for a make_fx graph and one of its aten.t nodes, before and after
    `rewrite_transposes` changes that same graph object in place (and recompiles it, or not)."""
    gm = build_graph(model_name, "make_fx")
    node = next(n for n in gm.graph.nodes if n.target == aten.t.default)
    before = {"node": answer(lambda: attempt.node_dialect(node)), "graph": answer(lambda: attempt.detect_dialect(gm))}
    rewritten = rewrite_transposes(gm, recompile)
    after = {"node": answer(lambda: attempt.node_dialect(node)), "graph": answer(lambda: attempt.detect_dialect(gm))}
    return {"node": node.name, "rewritten": rewritten, "before": before, "after": after}


# a cond in a cond's true branch; Linear layers (make_fx: aten.t + aten.addmm) in the outer false branch (depth 1)
# and in the inner false branch (depth 2): the only ops that are not core
NESTED_LINEARS = ("cond", ("cond", ("core",), ("linear",)), ("linear",))


def nested_linears_graph() -> torch.fx.GraphModule:
    return _programs().capture_program(NESTED_LINEARS, "none", "make_fx", False)


def probe_rewrite_subgraphs(attempt: ModuleType, recompile: bool) -> dict:
    """detect_dialect of make_fx of NESTED_LINEARS before and after `rewrite_transposes` rewrites the aten.t nodes
    inside its subgraphs (depth 1 and 2) in place, with or without recompiling them."""
    gm = nested_linears_graph()
    before = answer(lambda: attempt.detect_dialect(gm))
    rewritten = rewrite_transposes(gm, recompile)
    return {"before": before, "rewritten": rewritten, "after": answer(lambda: attempt.detect_dialect(gm))}


def dead_aten(x: torch.Tensor) -> torch.Tensor:
    torch.ops.aten.relu.default(x)  # read by no node: a pass has not run eliminate_dead_code() yet
    return x.sin()


def unread_node_graph(case: str) -> torch.fx.GraphModule:
    """"top": symbolic_trace of `dead_aten` (an aten overload nobody reads, beside torch-level .sin()); "subgraph":
    make_fx of torch.cond(h.amax() > 0, relu(h) * 2, relu(h) * 2) (core ops only), then a pass adds an aten.t.default
    node that no node reads to the true branch."""
    if case == "top":
        return torch.fx.symbolic_trace(dead_aten)
    programs = _programs()
    return programs.add_unread_node(programs.capture_program(("cond", ("core",), ("core",)), "none", "make_fx", False))


def _token(value: object) -> str:
    """An object's identity, plus its keys or length for a dict or list (a change made inside it in place)."""
    if isinstance(value, dict):
        return f"{id(value)} keys={list(value)!r}"
    if isinstance(value, (list, set)):
        return f"{id(value)} len={len(value)}"
    return str(id(value))


def graph_snapshot(gm: torch.fx.GraphModule) -> dict[str, str]:
    """Everything the caller's GraphModule holds and runs, as {what: token}, for `gm` and every module it holds
    (subgraphs, partitions, leftovers): the module object and its class, every attribute (gm.meta's keys too), the
    generated code (gm.code) and the forward that runs, each node (op, target, args, kwargs, order) and each node's
    meta, key by key (the identity of each value). Two snapshots are equal when the call left everything as found."""
    state: dict[str, str] = {}
    for path, module in gm.named_modules(remove_duplicate=False):
        where = f"`{path}`" if path else "the root module"
        state[f"{where}: the module object"] = str(id(module))
        state[f"{where}: its class"] = str(id(type(module)))
        for name, attribute in vars(module).items():
            if name not in ("meta", "_code", "_lineno_map"):  # meta key by key, the code as text (below)
                state[f"{where}: attribute {name!r}"] = _token(attribute)
        for kind in ("_modules", "_parameters", "_buffers"):
            for name, held in getattr(module, kind, {}).items():
                state[f"{where}: {kind[1:-1]} {name!r}"] = str(id(held))
        if not isinstance(module, torch.fx.GraphModule):
            continue
        for key, meta_value in getattr(module, "meta", {}).items():
            state[f"{where}: meta[{key!r}] (gm.meta)"] = _token(meta_value)
        state[f"{where}: its generated code (gm.code)"] = module.code
        state[f"{where}: the forward it runs"] = str(id(type(module).__dict__.get("forward", type(module).forward)))
        for name, attribute in vars(module.graph).items():
            state[f"{where}: graph attribute {name!r}"] = _token(attribute)
        state[f"{where}: its nodes, in order"] = " ".join(node.name for node in module.graph.nodes)
        for node in module.graph.nodes:
            state[f"{where}: node {node.name!r}"] = (f"{node.op} {node.target} args={node.args!r} "
                                                     f"kwargs={node.kwargs!r} type={node.type!r}")
            state[f"{where}: node {node.name!r}: its meta dict (node.meta itself)"] = str(id(node.meta))
            for key, meta_value in node.meta.items():
                state[f"{where}: node {node.name!r}: meta[{key!r}]"] = _token(meta_value)
    return state


def run_graph(gm: torch.fx.GraphModule, inputs: tuple) -> list[float]:
    """What the caller's module computes now (its forward, as last compiled), as plain numbers."""
    with torch.no_grad():
        out = gm(*inputs)
    flat = out if isinstance(out, (tuple, list)) else (out,)
    return [round(float(v), 6) for t in flat if isinstance(t, torch.Tensor) for v in t.detach().flatten().tolist()]


def retargeted_graph(case: str) -> tuple[torch.fx.GraphModule, tuple, list[str]]:
    """A graph a pass is halfway through: it retargeted nodes in place and has not called recompile() yet, so
    gm.code and what gm(x) computes still follow the old nodes. "top": make_fx of relu(x) * 2 with its relu now
    aten.square.default; "subgraph": make_fx of NESTED_LINEARS with the aten.t nodes of its cond branches (depth 1 and
    2) now aten.permute. Returns the graph, an input, and the retargeted nodes."""
    from torch.fx.experimental.proxy_tensor import make_fx

    if case == "top":
        x = -torch.ones(2, 3)
        gm = make_fx(lambda t: torch.relu(t) * 2)(x)
        node = next(n for n in gm.graph.nodes if n.target == aten.relu.default)
        node.target = aten.square.default
        return gm, (x,), [node.name]
    gm = nested_linears_graph()
    rewritten = rewrite_transposes(gm, recompile=False)
    return gm, (_programs().example_input(),), rewritten


def probe_retargeted(attempt: ModuleType, case: str) -> dict:
    """detect_dialect of `retargeted_graph(case)`; the module's state and what it computes, before and after."""
    gm, inputs, rewritten = retargeted_graph(case)
    before, ran_before = graph_snapshot(gm), run_graph(gm, inputs)
    got = answer(lambda: attempt.detect_dialect(gm))
    return {"graph": got, "rewritten": rewritten, "before": before, "after": graph_snapshot(gm),
            "ran_before": ran_before, "ran_after": run_graph(gm, inputs)}


def probe_unread_nodes(attempt: ModuleType, case: str) -> dict:
    """detect_dialect of `unread_node_graph(case)`, and the module's state before and after that call."""
    gm = unread_node_graph(case)
    before = graph_snapshot(gm)
    got = answer(lambda: attempt.detect_dialect(gm))
    return {"graph": got, "before": before, "after": graph_snapshot(gm)}


# Every capture the lesson teaches, each of a program with a higher-order op where the capture keeps one (the
# subgraphs' nodes carry the capture's meta too), and a size (a node whose recorded value is an int): the meta
# conventions differ per capture (symbolic_trace: none; Dynamo and torch._dynamo.export: "example_value" and no
# "val"; make_fx, export, aot_autograd: "val" and "tensor_meta"; symbolic_trace then FakeTensorProp: "val").
# Derived from programs.PROGRAM_CAPTURES, so a capture added to the program generator is covered here too.
LEFT_ALONE_BODIES = {"symbolic_trace": ("no_grad", ("linear",)), "symbolic_trace_values": ("wrap", ("linear",))}
LEFT_ALONE_BODY = ("cond", ("linear",), ("seq", ("core",), ("chunk",)))


def left_alone_cases(deep: bool) -> list[tuple]:
    """(body, sizes, method, dynamic) for every capture of programs.PROGRAM_CAPTURES; deep adds the symbolic-batch
    captures (SymInt values in meta)."""
    captures = _programs().PROGRAM_CAPTURES
    cases = [(LEFT_ALONE_BODIES.get(method, LEFT_ALONE_BODY), "int", method, False) for method in captures]
    if deep:
        cases += [(LEFT_ALONE_BODY, "int", method, True) for method in ("dynamo", "dynamo_export", "aot_autograd")]
    return cases


def _meta_keys(gm: torch.fx.GraphModule) -> dict[str, list[str]]:
    """Each node's meta keys, by the label graph_snapshot gives the node ("`path`: node 'name'")."""
    keys = {}
    for path, module in gm.named_modules(remove_duplicate=False):
        if isinstance(module, torch.fx.GraphModule):
            where = f"`{path}`" if path else "the root module"
            for node in module.graph.nodes:
                keys[f"{where}: node {node.name!r}"] = sorted(map(str, node.meta))
    return keys


def probe_left_alone(attempt: ModuleType, cases: list[tuple]) -> list[dict]:
    """For each case of `left_alone_cases`: the graph programs.capture_program builds, node_dialect asked of every
    node (root and subgraphs) and then detect_dialect, and what that changed in the module: the entries of
    graph_snapshot that differ before and after (empty when it was left as found), and the meta keys the changed
    nodes held before the call. Stops at the first case with a change."""
    found = []
    for body, sizes, method, dynamic in cases:
        gm = _programs().capture_program(body, sizes, method, dynamic)
        before, keys = graph_snapshot(gm), _meta_keys(gm)
        for graph_module in [m for m in gm.modules() if isinstance(m, torch.fx.GraphModule)]:
            for node in list(graph_module.graph.nodes):
                answer(lambda: attempt.node_dialect(node))
        answer(lambda: attempt.detect_dialect(gm))
        after = graph_snapshot(gm)
        changed = [what for what in list(before) + [what for what in after if what not in before]
                   if before.get(what) != after.get(what)]  # in the snapshot's order: root first, node by node
        nodes = dict.fromkeys(what.split(": meta[", 1)[0].split(": its meta dict", 1)[0] for what in changed)
        found.append({"case": [body, sizes, method, dynamic],
                      "before": {what: before[what] for what in changed if what in before},
                      "after": {what: after[what] for what in changed if what in after},
                      "keys_before": {label: keys[label] for label in nodes if label in keys}})
        if changed:
            break
    return found


def probe_functorch(attempt: ModuleType, case: str, method: str) -> dict:
    """node_dialect of every node and detect_dialect (asked twice) of programs.functorch_graph(case, method), built
    where the attempt runs: its nodes' meta hold vmap's batched tensors, which cannot be copied across."""
    gm = _programs().functorch_graph(case, method)
    nodes = {}
    for path, graph_module in gm.named_modules():
        if isinstance(graph_module, torch.fx.GraphModule):
            for node in graph_module.graph.nodes:
                nodes[f"{path}/{node.name}" if path else node.name] = answer(lambda: attempt.node_dialect(node))
    return {"nodes": nodes, "graph": answer(lambda: attempt.detect_dialect(gm)),
            "again": answer(lambda: attempt.detect_dialect(gm))}
