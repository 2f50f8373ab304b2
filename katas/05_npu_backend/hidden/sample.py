"""`make diff N=5`'s sample: one model compiled with each backend, and what ran where.

The backends' internals differ, so the columns show what the simulated NPU and the host saw: each NPU
program with the ATen nodes it ran, the ops the host ran outside NPU programs, the fallback warnings, whether
the answer matches eager, and what a second batch size and a repeated call cost on the device.
"""
from __future__ import annotations

import copy
from collections import defaultdict
from pathlib import Path

import torch

from checker.kit import load_module
from checker.kit.samples import guarded, picture_or_failure
from katas.common.npu import DEVICE, NPUFallbackWarning

_HIDDEN = Path(__file__).parent
probes = load_module(_HIDDEN / "probes.py", "kata05_npu_backend_probes")
# the checks' Linear -> GELU -> sin -> Linear -> ReLU -> softmax -> Linear: fusion, and NPU islands around CPU ops
SAMPLE = load_module(_HIDDEN / "checks.py", "kata5_checks_for_sample").SANDWICH


def _call(module, session: str, x: torch.Tensor):
    DEVICE.reset()
    called = probes.call(module, session, (x,))
    return called, copy.deepcopy(DEVICE.stats)


def _report(module) -> str:
    eager = probes.build(SAMPLE.recipe)
    session = probes.compile_model(module, SAMPLE.recipe)
    DEVICE.reset()
    DEVICE.release_all()
    (x,) = SAMPLE.inputs()
    called, stats = _call(module, session, x)
    with torch.no_grad():
        matches = called.error is None and torch.allclose(called.output, eager(x))
    host = probes.host_ops(module, session)
    programs = defaultdict(list)
    for run in stats.nodes_run:
        programs[run.program].append(f"{run.node} = {run.target}")
    lines = [f"matches eager: {'yes' if matches else 'NO'}",
             f"{stats.runs} NPU program run(s), {stats.launches} launch(es), {stats.programs_compiled} compiled"]
    for name, nodes in programs.items():
        lines += [f"NPU program {name}:", *(f"  {node}" for node in nodes)]
    lines += ["host ran (outside NPU programs):", *(f"  {op} x{n}" for op, n in sorted(host.items()))]
    if not host:
        lines.append("  nothing")
    fallbacks = [message for category, message in called.warnings if category == NPUFallbackWarning.__name__]
    lines += ["fallback warnings:", *(f"  {text}" for text in fallbacks)] if fallbacks else ["fallback warnings: none"]
    for what, batch in (("then batch 5", 5), ("then batch 5 again", 5)):
        _, stats = _call(module, session, torch.randn(batch, x.shape[1], generator=torch.Generator().manual_seed(5)))
        lines.append(f"{what}: {stats.runs} run(s), {stats.programs_compiled} compiled, "
                     f"{stats.input_bytes_to_device} B of inputs + {stats.constant_bytes_to_device} B of constants "
                     f"to the device")
    return "\n".join(lines)


def sample_graphs(attempt, reference) -> tuple[str, str]:
    header = f"torch.compile({SAMPLE.what()}), calls under no_grad\n"
    theirs = header + guarded(_report, reference)
    mine = header + guarded(_report, attempt)
    return mine, theirs


def graph_pictures(attempt, reference, *, capture=None, model=None):
    """`make graph N=5`: the sample's ATen graph (as aot_autograd hands it to a backend) after each side's
    legalize_for_npu and partition_for_npu: NPU partitions framed, host ops blue, host<->device transfers red."""
    from checker.kit.pictures import Panel, flattened_partitions
    from katas.common import capture as capture_model

    if model not in (None, "sandwich"):
        raise ValueError(f"kata 5 draws one model, sandwich, not {model!r}")
    method = capture or "aot_autograd"
    sides = []
    for module in (attempt, reference):
        def draw(module=module):
            gm = capture_model(probes.build(SAMPLE.recipe), SAMPLE.inputs(), method).gm
            legal = module.legalize_for_npu(gm)
            parted = module.partition_for_npu(gm)
            return flattened_partitions(parted, method, caption=f"legalize_for_npu rewrote {legal} node(s)",
                                        is_partition=lambda target, sub: True)
        sides.append(picture_or_failure(draw))
    return [Panel(f"{SAMPLE.what()} as an ATen graph ({method})", sides[0], sides[1])]
