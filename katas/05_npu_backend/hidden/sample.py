"""`make diff N=5`'s sample: one model compiled with each backend, and what ran where.

The backends' internals differ, so the columns show what the simulated NPU and the host saw: each NPU
program with the ATen nodes it ran, the ops the host ran outside NPU programs, the fallback warnings, and
whether the answer matches eager.
"""
from __future__ import annotations

import copy
import warnings
from collections import defaultdict

import torch
import torch._dynamo

from pathlib import Path

from torch.utils._python_dispatch import TorchDispatchMode

from checker.child import load_module
from checker.samples import guarded
from katas.common.npu import DEVICE, NPUFallbackWarning

# the checks' Linear -> GELU -> sin -> Linear -> ReLU -> softmax -> Linear: fusion, and NPU islands around CPU ops
SAMPLE = load_module(Path(__file__).with_name("checks.py"), "kata5_checks_for_sample").SANDWICH


class _HostOps(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: dict[str, int] = defaultdict(int)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not DEVICE.busy:
            self.ops[str(func)] += 1
        return func(*args, **(kwargs or {}))


def _report(module) -> str:
    model, (x,) = SAMPLE.build(), SAMPLE.inputs()
    graphs = []

    def record(gm, example_inputs):
        compiled = module.npu_backend(gm, example_inputs)
        graphs.append((compiled, list(example_inputs)))
        return compiled

    torch._dynamo.reset()
    DEVICE.reset()
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        out = torch.compile(model, backend=record)(x)
        matches = torch.allclose(out, model(x))
    stats = copy.deepcopy(DEVICE.stats)  # the host-ops rerun below runs the programs again
    host = _HostOps()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for compiled, inputs in graphs:
            with host:
                compiled(*inputs)
    programs = defaultdict(list)
    for run in stats.nodes_run:
        programs[run.program].append(f"{run.node} = {run.target}")
    lines = [f"matches eager: {'yes' if matches else 'NO'}", f"{stats.runs} NPU program run(s), {stats.launches} launch(es)"]
    for name, nodes in programs.items():
        lines += [f"NPU program {name}:", *(f"  {node}" for node in nodes)]
    lines += ["host ran (outside NPU programs):", *(f"  {op} x{n}" for op, n in sorted(host.ops.items()))]
    if not host.ops:
        lines.append("  nothing")
    fallbacks = [str(w.message) for w in caught if issubclass(w.category, NPUFallbackWarning)]
    lines += ["fallback warnings:", *(f"  {text}" for text in fallbacks)] if fallbacks else ["fallback warnings: none"]
    return "\n".join(lines)


def sample_graphs(attempt, reference) -> tuple[str, str]:
    header = f"torch.compile({SAMPLE.what()}), one call under no_grad\n"
    theirs = header + guarded(_report, reference)
    mine = header + guarded(_report, attempt)
    return mine, theirs
