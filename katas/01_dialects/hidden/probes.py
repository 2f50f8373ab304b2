"""Probes for kata 1's checks: the questions that must be asked where the attempt's code runs.

Most checks hand a captured graph to `node_dialect` / `detect_dialect`, and the graph travels to the attempt
as a copy. Two kinds of question cannot travel that way:

* graphs that cannot be copied: export's unlifted `ep.module()`, and make_fx graphs whose nodes hold the
  profiler's objects. `probe_graph` builds the graph where the attempt runs and asks there;
* a graph rewritten in place between two calls: across the channel the rewritten graph would arrive as a
  fresh copy, which hides an attempt that caches its answer per GraphModule or per node.
  `probe_rewrite_in_place` rewrites the very graph the attempt has already answered for.

A probe returns the attempt's answers as plain data (see `answer`); the checks decide what is right.
"""
from __future__ import annotations

from types import ModuleType
from typing import Callable

import torch
import torch.fx

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


def rewrite_transposes(gm: torch.fx.GraphModule, recompile: bool = True) -> list[str]:
    """What a layout pass does: every aten.t(w) becomes aten.permute(w, [1, 0]), the same node rewritten in place,
    then (if `recompile`) the GraphModule recompiles; without it `gm.code` still shows aten.t. Returns the names
    of the rewritten nodes."""
    rewritten = []
    for node in gm.graph.nodes:
        if node.target == aten.t.default:
            node.target, node.args = aten.permute.default, (node.args[0], [1, 0])
            rewritten.append(node.name)
    if recompile:
        gm.recompile()
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
