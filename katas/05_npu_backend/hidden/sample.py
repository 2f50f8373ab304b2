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


def _input_names(model: torch.nn.Module, gm, method: str) -> dict[str, str]:
    """What each placeholder of an aot_autograd graph is (`fc1.weight`, `x`): aot_autograd numbers them
    (arg0_1, ...) in the order of Dynamo's graph, whose placeholders are named after their source
    (`l_self_modules_fc1_parameters_weight_`). Other captures name their inputs themselves."""
    import re

    from katas.common import capture as capture_model

    if method != "aot_autograd":
        return {}
    sources = [n.name for n in capture_model(model, SAMPLE.inputs(), "dynamo").gm.graph.nodes if n.op == "placeholder"]
    placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    if len(sources) != len(placeholders):
        return {}
    readable = [re.sub(r"_(modules|parameters|buffers)_", ".", re.sub(r"^l_(self_modules_)?", "", name)).strip("_")
                for name in sources]
    return dict(zip(placeholders, readable))


def _run_caption(module) -> str:
    """What the side's whole backend did when the sample ran through torch.compile: programs compiled and
    launched at the first shape, at a second batch size and on a repeat, constants uploaded, fallbacks."""
    session = probes.compile_model(module, SAMPLE.recipe)
    DEVICE.reset()
    DEVICE.release_all()
    (x,) = SAMPLE.inputs()
    lines = []
    for what, batch in (("first call", x.shape[0]), ("batch 5", 5), ("batch 5 again", 5)):
        called, stats = _call(module, session, torch.randn(batch, x.shape[1], generator=torch.Generator().manual_seed(5)))
        fallbacks = sum(category == NPUFallbackWarning.__name__ for category, _ in called.warnings)
        lines.append(f"{what}: {stats.programs_compiled} program(s) compiled, {stats.launches} launch(es), "
                     f"{stats.constant_bytes_to_device} B of weights uploaded"
                     + (f", {fallbacks} fallback warning(s)" if fallbacks else "")
                     + (f", error: {called.error}" if called.error else ""))
    return "\n".join(lines)


def graph_pictures(attempt, reference, *, capture=None, model=None):
    """`make graph N=5`: the sample's ATen graph (as aot_autograd hands it to a backend) after each side's
    legalize_for_npu and partition_for_npu: NPU partitions framed and named, inputs named, host ops blue,
    host<->device transfers red; under it, what the side's whole backend did under torch.compile (programs per
    shape, weights uploaded, fallbacks). The fusion inside each partition happens after this picture: the
    device's programs (`make diff N=5`) show the fused ops."""
    from checker.kit.pictures import Panel, flattened_partitions
    from katas.common import capture as capture_model

    if model not in (None, "sandwich"):
        raise ValueError(f"kata 5 draws one model, sandwich, not {model!r}")
    method = capture or "aot_autograd"
    sides = []
    for module in (attempt, reference):
        def draw(module=module):
            built = probes.build(SAMPLE.recipe)
            gm = capture_model(built, SAMPLE.inputs(), method).gm
            names = _input_names(built, gm, method)
            legal = module.legalize_for_npu(gm)
            parted = module.partition_for_npu(gm)
            ran = guarded(_run_caption, module)
            return flattened_partitions(parted, method, caption=f"legalize_for_npu rewrote {legal} node(s)\n{ran}",
                                        is_partition=lambda target, sub: True,
                                        note_of=lambda node: names.get(node.name, "") if node.op == "placeholder" else "")
        sides.append(picture_or_failure(draw))
    return [Panel(f"{SAMPLE.what()} as an ATen graph ({method})", sides[0], sides[1],
                  notes=["each dashed frame is one NPU partition, named; its nodes run in one NPU program per input "
                         "shape", "red edges: values copied between host and device", "under each graph: what the "
                         "backend did when torch.compile ran the sample at two batch sizes"])]
