"""`make diff N=1`'s sample: the MLP captured every way, each node with the dialect each module gives it.

The graphs are the same for the attempt and the reference (the tools capture them); what differs is the
dialect each side reads off every node and off the whole graph, so that is what the columns show.
"""
from __future__ import annotations

from checker.samples import graph_lines, guarded, per_capture
from katas.common.capture import CAPTURES


def _value(dialect) -> str:
    return "None (neutral)" if dialect is None else str(getattr(dialect, "value", dialect))


def _classify(module, gm) -> list[str]:
    lines = [f"detect_dialect: {guarded(lambda: _value(module.detect_dialect(gm)))}"]
    lines += ["  " + line for line in graph_lines(gm, lambda node: guarded(lambda: _value(module.node_dialect(node))))]
    return lines


def sample_graphs(attempt, reference) -> tuple[str, str]:
    return per_capture("mlp", CAPTURES, "MLP", _classify, attempt, reference)
