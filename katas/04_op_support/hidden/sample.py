"""`make diff N=4`'s sample: the `renamed` model (proj: Linear, act: Softmax, block: Sequential(Linear, SiLU),
head: Linear) captured once per dialect, each node with the canonical op and the verdict each module gives it.

The graphs are the same for both columns (the tools capture them); what differs is what each side reads off
every node, so that is what the columns show.
"""
from __future__ import annotations

from checker.kit.samples import graph_lines, guarded, per_capture, picture_or_failure

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


def graph_pictures(attempt, reference, *, capture=None, model=None):
    """`make graph N=4`: the zoo model (`renamed` unless `model`) captured once per dialect (or only `capture`),
    cut into NPU partitions by CapabilityBasedPartitioner with each side's NPUOperatorSupport: partitions framed,
    host nodes blue, every value crossing between host and device drawn red and counted."""
    import copy

    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

    from checker.kit.pictures import Panel, flattened_partitions
    from katas.common import capture as capture_model
    from katas.common.zoo import ZOO

    if model is not None and model not in ZOO:
        raise ValueError(f"no sample model {model!r}; the zoo has {', '.join(sorted(ZOO))}")
    name = model or "renamed"
    zoo = ZOO[name]
    panels = []
    for method in [capture] if capture else CAPTURES:
        gm = capture_model(zoo.build(), zoo.inputs(), method).gm
        sides = []
        for module in (attempt, reference):
            def draw(module=module):
                partitioner = CapabilityBasedPartitioner(copy.deepcopy(gm), module.NPUOperatorSupport(),
                                                         allows_single_node_partition=True)
                fused = partitioner.partition_and_fuse()
                return flattened_partitions(fused, method, is_partition=lambda target, sub: target.startswith("fused_"))
            sides.append(picture_or_failure(draw))
        panels.append(Panel(f"{name} captured with {method}", sides[0], sides[1]))
    return panels
