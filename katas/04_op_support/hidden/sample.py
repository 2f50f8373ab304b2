"""`make diff N=4`'s sample: the `renamed` model (proj: Linear, act: Softmax, block: Sequential(Linear, SiLU),
head: Linear) captured once per dialect, each node with the canonical op and the verdict each module gives it.

The graphs are the same for both columns (the tools capture them); what differs is what each side reads off
every node, so that is what the columns show.
"""
from __future__ import annotations

from checker.samples import graph_lines, guarded, per_capture

CAPTURES = ("symbolic_trace", "dynamo", "make_fx", "export_core")  # one per dialect: module, torch, aten, core aten


def _verdicts(module, gm) -> list[str]:
    submodules = dict(gm.named_modules())
    verdicts: dict = {}
    shown = guarded(lambda: verdicts.update(module.classify(gm)))

    def describe(node) -> str:
        op = guarded(lambda: repr(module.canonical_op(node, submodules)))
        verdict = verdicts.get(node.name)
        where = f", {getattr(verdict, 'value', verdict)}" if verdict is not None else ""
        return f"{op}{where}"

    header = [] if shown == "None" else [f"classify: {shown}"]
    return header + ["  " + line for line in graph_lines(gm, describe)]


def sample_graphs(attempt, reference) -> tuple[str, str]:
    return per_capture("renamed", CAPTURES, "`renamed` model", _verdicts, attempt, reference)
