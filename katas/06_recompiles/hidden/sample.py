"""`make diff N=6` and `make graph N=6`: what each side predicts for one call sequence, how each side's fixes
compile, and how each side's BucketedNPU serves a few batch sizes.

The text columns show, per `dynamic` setting, each call's predicted outcome with Dynamo's real one beside it;
then, per fix, how many graphs torch.compile made over the README's calls; then, per batch size, the bucket the
server uploaded and whether it fell back. The pictures draw the graphs each side's fixes compile (symbolic
inputs marked), beside the suspect's graph for one call.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import torch

from checker.kit import load_module
from checker.kit.samples import guarded, picture_or_failure
from katas.common.npu import DEVICE

_HIDDEN = Path(__file__).parent
checks = load_module(_HIDDEN / "checks.py", "kata06_checks_for_sample")
CALLS = checks.calls_of((2, 4), (3, 4), (7, 4), (1, 4), ((3, 4), 2), ((3, 4), 1, "float16"), (3, 5))
BATCHES = (3, 1, 8, 5, 11)


def _predictions(module) -> str:
    lines = []
    for dynamic in (False, None, True):
        truth = checks.measure(CALLS, dynamic)
        mine = module.predict([module.Call(tuple(s), n, d) for s, n, d in CALLS], dynamic)
        lines.append(f"dynamic={dynamic}:")
        for call, guess, seen in zip(CALLS, mine, truth):
            said = checks._shown(getattr(guess, "kind", None), sorted(getattr(guess, "symbolic", ()) or ()))
            real = checks._shown(seen.kind, seen.symbolic)
            lines.append(f"  {checks.call_text(call):32} {said:34} {'' if said == real else 'Dynamo: ' + real}")
    return "\n".join(lines)


def _fixes(module) -> str:
    lines = []
    for spec in checks.FIXES.values():
        inputs = checks._inputs(spec, 0)
        _, state = checks._eager_outputs(spec, inputs)
        seen = checks.probes.run_fix(module, spec.name, inputs, state)
        errors = [c["error"] for c in seen["calls"] if c["error"]]
        eager = sum(not c["in_graph"] for c in seen["calls"])
        lines.append(f"{spec.name}: {len(seen['graphs'])} graph(s) over {len(seen['calls'])} call(s)"
                     + (f", {eager} call(s) ran eagerly" if eager else "") + (f"; failed: {errors[0]}" if errors else ""))
    return "\n".join(lines)


def _buckets(module) -> str:
    DEVICE.release_all()
    server = module.BucketedNPU(checks.build_mlp(checks.SERVED).eval())
    lines = [f"BucketedNPU(model) for {checks.describe(checks.SERVED).splitlines()[0]}"]
    generator = torch.Generator().manual_seed(0)
    for batch in BATCHES:
        DEVICE.reset()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            server(torch.randn(batch, checks.SERVED.in_features, generator=generator))
        stats = DEVICE.stats
        rows = stats.input_bytes_to_device // (checks.SERVED.in_features * 4)
        where = f"NPU, {rows} rows uploaded" if stats.runs else "CPU"
        lines.append(f"  batch {batch:2}: {where}; {stats.programs_compiled} compiled"
                     + (f"; warned: {caught[0].message}" if caught else ""))
    lines.append(f"  fallbacks = {getattr(server, 'fallbacks', None)}")
    return "\n".join(lines)


def _report(module) -> str:
    return "\n\n".join(guarded(part, module) for part in (_predictions, _fixes, _buckets))


def sample_graphs(attempt, reference) -> tuple[str, str]:
    return _report(attempt), _report(reference)


def _last_graph(module, spec):
    """A Picture of the last graph `module`'s fix compiled over the spec's calls, symbolic inputs marked."""
    from checker.kit.pictures import picture_of

    captured: list[torch.fx.GraphModule] = []
    inputs = checks._inputs(spec, 0)
    _, state = checks._eager_outputs(spec, inputs)
    fix, _ = checks.probes.build_fix(module, spec.name, state)
    torch._dynamo.reset()
    compiled = torch.compile(fix, backend=lambda gm, _: captured.append(gm) or gm)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for x in inputs:
            compiled(x.clone())
    last = captured[-1]

    def kind_of(node) -> str:
        value = node.meta.get("example_value")
        symbolic = isinstance(value, torch.SymInt) or (
            isinstance(value, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in value.shape))
        return "symbolic" if node.op == "placeholder" and symbolic else ""

    return picture_of(last, f"the last of {len(captured)} graph(s) over {len(inputs)} calls", kind_of=kind_of)


def graph_pictures(attempt, reference, *, capture=None, model=None):
    """`make graph N=6`: the last graph each side's fix compiled over the README's calls (symbolic inputs
    marked), under the suspect's graph for the first call."""
    from checker.kit.pictures import Panel, picture_of

    if capture not in (None, "dynamo"):
        raise ValueError(f"kata 6 draws Dynamo graphs only, not {capture!r}")
    panels = []
    for name, spec in checks.FIXES.items():
        if model not in (None, name):
            continue
        suspect = getattr(checks.suspects, spec.suspect)
        suspect = suspect() if isinstance(suspect, type) else suspect
        captured: list[torch.fx.GraphModule] = []
        torch._dynamo.reset()
        with torch.no_grad():
            for x in checks._inputs(spec, 0)[:3]:
                torch.compile(suspect, backend=lambda gm, _: captured.append(gm) or gm)(x)
        before = picture_of(captured[-1], f"suspects.{spec.suspect}, third call: graph {len(captured)}")
        sides = [picture_or_failure(lambda module=module: _last_graph(module, spec)) for module in (attempt, reference)]
        panels.append(Panel(f"{name}", sides[0], sides[1], before=before))
    if not panels:
        raise ValueError(f"kata 6 draws {', '.join(checks.FIXES)}, not {model!r}")
    return panels
