"""`make diff N=1`'s sample: the MLP captured every way, each node with the dialect each module gives it.

The graphs are the same for the attempt and the reference (the tools capture them); what differs is the
dialect each side reads off every node and off the whole graph, so that is what the columns show.
"""
from __future__ import annotations

from checker.kit.samples import graph_lines, guarded, per_capture
from katas.common.capture import CAPTURES


def _value(dialect) -> str:
    return "None (neutral)" if dialect is None else str(getattr(dialect, "value", dialect))


def _classify(module, gm) -> list[str]:
    lines = [f"detect_dialect: {guarded(lambda: _value(module.detect_dialect(gm)))}"]
    lines += ["  " + line for line in graph_lines(gm, lambda node: guarded(lambda: _value(module.node_dialect(node))))]
    return lines


def sample_graphs(attempt, reference) -> tuple[str, str]:
    return per_capture("mlp", CAPTURES, "MLP", _classify, attempt, reference)


def _kind(module, node) -> str:
    """The node's colour in `make graph`: the dialect `module` gives it, "neutral" for None, "error" if it raised."""
    try:
        dialect = module.node_dialect(node)
    except Exception:  # noqa: BLE001 - an unfinished or wrong attempt: draw it, do not stop the page
        return "error"
    if dialect is None:
        return "io" if node.op in ("placeholder", "output") else "neutral"
    return str(getattr(dialect, "value", dialect))


def graph_pictures(attempt, reference, *, capture=None, model=None):
    """`make graph N=1`: the zoo model (`mlp` unless `model`) captured each way (or only `capture`), every node
    coloured by the dialect each side gives it; a node where the attempt disagrees carries the reference's word."""
    from checker.kit.pictures import Panel, picture_of
    from katas.common import capture as capture_model
    from katas.common.capture import CAPTURE_DIALECT
    from katas.common.zoo import ZOO

    if model is not None and model not in ZOO:
        raise ValueError(f"no sample model {model!r}; the zoo has {', '.join(sorted(ZOO))}")
    zoo = ZOO[model or "mlp"]
    panels = []
    for method in [capture] if capture else CAPTURES:
        gm = capture_model(zoo.build(), zoo.inputs(), method).gm
        theirs = {node.name: _kind(reference, node) for node in gm.graph.nodes}
        mine = {node.name: _kind(attempt, node) for node in gm.graph.nodes}
        ref_graph = guarded(lambda: _value(reference.detect_dialect(gm)))
        my_graph = guarded(lambda: _value(attempt.detect_dialect(gm)))
        panels.append(Panel(
            f"{model or 'mlp'} captured with {method} (the tool's dialect: {CAPTURE_DIALECT[method]})",
            picture_of(gm, method, kind_of=lambda n: mine[n.name], caption=f"detect_dialect: {my_graph}",
                       note_of=lambda n: f"reference: {theirs[n.name]}" if mine[n.name] != theirs[n.name] else ""),
            picture_of(gm, method, kind_of=lambda n: theirs[n.name], caption=f"detect_dialect: {ref_graph}")))
    return panels
