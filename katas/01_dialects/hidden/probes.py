"""Probes for kata 1's checks: the questions that must be asked where the attempt's code runs.

Most checks hand a captured graph to `node_dialect` / `detect_dialect`, and the graph travels to the attempt
as a copy. Two kinds of question cannot travel that way:

* graphs that cannot be copied: export's unlifted `ep.module()`, and make_fx graphs whose nodes hold the
  profiler's objects. `probe_graph` builds the graph where the attempt runs and asks there;
* a graph rewritten in place between two calls: across the channel the rewritten graph would arrive as a
  fresh copy, which hides an attempt that caches its answer per GraphModule or per node (and a rewrite inside
  a subgraph would not reach the worker's copy at all). `probe_rewrite_in_place` and `probe_rewrite_subgraphs`
  rewrite the very graph the attempt has already answered for;
* whether the attempt changed the graph it was asked about (inside subgraphs too): `probe_unread_nodes`.

A probe returns the attempt's answers as plain data (see `answer`); the checks decide what is right.
"""
from __future__ import annotations

from types import ModuleType
from typing import Callable

import sys
from pathlib import Path

import torch
import torch.fx

from checker.child import load_module
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


def graph_snapshot(gm: torch.fx.GraphModule) -> list[str]:
    """Every node of `gm` and of every GraphModule it holds, as "path/name op target"."""
    return [f"{path}/{node.name} {node.op} {node.target}" if path else f"{node.name} {node.op} {node.target}"
            for path, graph_module in gm.named_modules() if isinstance(graph_module, torch.fx.GraphModule)
            for node in graph_module.graph.nodes]


def probe_unread_nodes(attempt: ModuleType, case: str) -> dict:
    """detect_dialect of `unread_node_graph(case)`, and the graph's nodes before and after that call."""
    gm = unread_node_graph(case)
    before = graph_snapshot(gm)
    got = answer(lambda: attempt.detect_dialect(gm))
    return {"graph": got, "before": before, "after": graph_snapshot(gm)}
