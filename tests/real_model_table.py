"""The references on real architectures: one row per model, one column per kata (issue 33's table).

    make real-models        # measure, write tests/real_models.json and the table in docs/real-models.md
    .venv/bin/python tests/real_model_table.py --model bert    # one model, printed only

tests/test_real_models.py checks that the committed results are current (same models, references and device).

What each column measures, with the references in solutions/:
  kata 1  detect_dialect on every capture (torch._dynamo.export included): right / captures that succeeded
          (torch._dynamo.export's aten.sym_size.int reads record sizes, so they are neutral: its graphs are TORCH)
  kata 3  Linear -> GELU pairs fused / pairs the model has (its MLP blocks with a GELU), per capture, and the
          reasons unfused_pairs gives for the GELUs the pass left
  kata 4  NPU-supported call nodes / call nodes, per capture (one model, one answer?)
  kata 5  NPU share -- compute ops that ran on the NPU / compute ops of the graph the op table supports --
          at the first shape, at a second batch size (and sequence length or image size), and on a later call;
          the simulated speed-up over running the whole model on the CPU at each of the two shapes, by the cost
          model below, and the seconds of the first call at each shape (capture, backend, NPU compiles)
  kata 8  the whole path (export, legalise, delegate, save, load in this process): max error, and the programs
          compiled when the loaded program runs a shape it ran before (0: every NPU island's program kept)
  kata 9  SQNR (dB) of the quantized model against eager; the kata's bar is 20 dB
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.utils._python_dispatch  # noqa: E402

from checker.kit import load_reference  # noqa: E402
from katas.common.capture import CAPTURE_DIALECT, CAPTURES, capture  # noqa: E402
from katas.common.real_models import REAL_MODELS  # noqa: E402

RESULTS = ROOT / "tests" / "real_models.json"
README = ROOT / "docs" / "real-models.md"
BEGIN, END = "<!-- real-models table: make real-models -->", "<!-- end of real-models table -->"
# What the table depends on: when one of these changes, `make real-models` must be run again.
INPUTS = ("katas/common/real_models.py", "katas/common/npu/device.py", "katas/common/npu/aot.py",
          "katas/common/capture.py",
          "solutions/01_dialects/dialects.py", "solutions/03_fusion_guard/fusion.py",
          "solutions/04_op_support/op_support.py", "solutions/05_npu_backend/backend.py",
          "solutions/08_export_aot/aot.py", "solutions/09_int8_quantization/int8.py", "tests/real_model_table.py")


def fingerprint() -> str:
    import hashlib

    digest = hashlib.sha256()
    for name in INPUTS:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes())
    return digest.hexdigest()[:16]
# The CPU side of the simulated speed-up, stated like the NPU's cost model in katas/common/npu/device.py: every ATen
# op the host runs costs a dispatch, and the host's vector units do a fixed number of flops per microsecond (flops
# counted as the device counts them: 2 per multiply-add of a matmul or convolution, one per output element of any
# other op, none for a view). The speed-up is the whole model on the CPU against the same call with the NPU's
# estimate (DEVICE.stats.estimated_us) plus what the host still ran.
CPU_OP_US = 3.0
CPU_FLOPS_PER_US = 50_000.0
GELU_PAIRS = {"bert": 2, "gpt2": 2, "vit": 2, "llama": 0, "resnet": 0, "mobilenet": 0}


def _short(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error).splitlines()[0][:120]}" if str(error) else type(error).__name__


def _captures(entry) -> dict[str, object]:
    """Every capture of the model at its first shape, torch._dynamo.export included; an error as a string."""
    out: dict[str, object] = {}
    inputs = entry.inputs(0)
    for method in CAPTURES:
        try:
            out[method] = capture(entry.build(), inputs, method).gm
        except Exception as error:  # noqa: BLE001 - a capture that fails is a result
            out[method] = _short(error)
    try:
        torch._dynamo.reset()
        with torch.no_grad():
            out["dynamo_export"] = torch._dynamo.export(entry.build())(*inputs).graph_module
    except Exception as error:  # noqa: BLE001
        out["dynamo_export"] = _short(error)
    return out


def _aten_level(gm) -> str:
    """"core_aten" if every ATen op of the graph (subgraphs included) carries torch's core tag, else "aten"."""
    sizes = (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)  # shape arithmetic shows no level
    ops = [n.target for m in gm.modules() if isinstance(m, torch.fx.GraphModule) for n in m.graph.nodes
           if isinstance(n.target, torch._ops.OpOverload) and n.target.namespace in ("aten", "prims")
           and not isinstance(n.meta.get("val", n.meta.get("example_value")), sizes)]
    return "core_aten" if all(torch.Tag.core in op.tags for op in ops) else "aten"


def kata1(entry, graphs) -> dict:
    dialects = load_reference("01_dialects", "dialects.py")
    expected = {**CAPTURE_DIALECT, "dynamo_export": "torch"}
    per = {}
    for method, gm in graphs.items():
        if isinstance(gm, str):
            per[method] = f"capture failed ({gm})"
            continue
        try:
            # torch._dynamo.export's aten.sym_size.int reads record sizes: shape arithmetic, neutral (the lesson)
            got = dialects.detect_dialect(gm).value
            want = _aten_level(gm) if expected[method] in ("aten", "core_aten") else expected[method]
            per[method] = "right" if got == want else f"wrong: {got}, expected {want}"
        except Exception as error:  # noqa: BLE001
            per[method] = f"crash: {_short(error)}"
    return per


def kata3(entry, graphs) -> dict:
    fusion = load_reference("03_fusion_guard", "fusion.py")
    per = {}
    for method, gm in graphs.items():
        if isinstance(gm, str):
            continue
        try:
            copy = torch.fx.GraphModule(gm, gm.graph.__deepcopy__())  # the pass rewrites in place
            fused = fusion.fuse_linear_gelu(copy)
            left = collections.Counter(reason for _, reason in fusion.unfused_pairs(copy))
            said = ", ".join(f"{count} {reason}" for reason, count in sorted(left.items()))
            per[method] = f"{fused}/{GELU_PAIRS[entry.name]}" + (f" (report: {said})" if said else "")
        except Exception as error:  # noqa: BLE001
            per[method] = f"crash: {_short(error)}"
    return per


def kata4(entry, graphs) -> dict:
    support = load_reference("04_op_support", "op_support.py")
    per = {}
    for method, gm in graphs.items():
        if isinstance(gm, str):
            continue
        try:
            verdicts = support.classify(gm)
            per[method] = f"{sum(v == 'npu' for v in verdicts.values())}/{len(verdicts)}"
        except Exception as error:  # noqa: BLE001
            per[method] = f"crash: {_short(error)}"
    return per


def _compute_ops_run(stats_before: Counter, stats_after: Counter, layout: frozenset) -> int:
    ran = stats_after - stats_before
    return sum(n * (2 if op == "linear_gelu" else 1) for op, n in ran.items() if op not in layout)


def op_flops(func, args, kwargs, out) -> int:
    """An ATen op's flops as the device counts them (torch's flop formulas for matmuls and convolutions)."""
    from torch.utils.flop_counter import flop_registry

    formula = flop_registry.get(func.overloadpacket)
    if formula is not None:
        return int(formula(*args, **kwargs, out_val=out))
    if func.is_view:
        return 0
    return sum(t.numel() for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor))


class HostWork(torch.utils._python_dispatch.TorchDispatchMode):
    """Counts the ATen ops the host runs and their flops; work the simulated NPU does (DEVICE.busy) is not the
    host's. Entered inside the backend's graph, not around the compiled call: Dynamo runs a frame eagerly while a
    dispatch mode is active, so around the call it would measure eager PyTorch."""

    def __init__(self) -> None:
        super().__init__()
        self.ops = 0
        self.flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from katas.common import npu

        out = func(*args, **(kwargs or {}))
        if not npu.DEVICE.busy:
            self.ops += 1
            self.flops += op_flops(func, args, kwargs or {}, out)
        return out

    def cpu_us(self) -> float:
        return self.ops * CPU_OP_US + self.flops / CPU_FLOPS_PER_US


def _counted_by(work: list[HostWork], partitioned: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Run the partitioned graph under the newest HostWork, whichever call it serves."""
    def forward(*args, **kwargs):
        if getattr(partitioned, "_needs_recompile", lambda: False)():  # a lazy GraphModule's first call
            partitioned.real_recompile()
        with work[-1]:
            return type(partitioned).forward(partitioned, *args, **kwargs)

    partitioned.forward = forward
    return partitioned


def kata5(entry) -> dict:
    from katas.common import npu

    backend = load_reference("05_npu_backend", "backend.py")
    support = load_reference("04_op_support", "op_support.py")
    supported: list[int] = []  # per graph the backend compiled: compute nodes the op table supports
    work: list[HostWork] = [HostWork()]
    original = backend.partition_for_npu

    judge = getattr(backend, "NPUFloatSupport", support.NPUOperatorSupport)()  # the reference's own support

    def counting(gm):
        subs = dict(gm.named_modules())
        supported.append(sum(1 for n in gm.graph.nodes if judge.is_node_supported(subs, n)
                             and support.canonical_op(n, subs) not in npu.LAYOUT_OPS))
        return _counted_by(work, original(gm))

    backend.partition_for_npu = counting
    backend.register()
    torch._dynamo.reset()
    npu.DEVICE.release_all()
    npu.DEVICE.reset()
    model = entry.build()
    compiled = torch.compile(model, backend="kata_npu")
    shares, fallbacks, speedups, seconds = [], 0, [], []
    for label, inputs in (("first", entry.inputs(0)), ("second", entry.inputs(1)), ("later", entry.inputs(1, seed=1)),
                          ("first again", entry.inputs(0, seed=2))):
        before, npu_us = Counter(npu.DEVICE.stats.ops_run), npu.DEVICE.stats.estimated_us
        work.append(HostWork())
        started = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught, torch.no_grad():
            warnings.simplefilter("always")
            out = compiled(*inputs)
        seconds.append(time.perf_counter() - started)
        fallbacks += sum(issubclass(w.category, npu.NPUFallbackWarning) for w in caught)
        with torch.no_grad(), HostWork() as eager:
            expected = model(*inputs)
        torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
        speedups.append(eager.cpu_us() / (npu.DEVICE.stats.estimated_us - npu_us + work[-1].cpu_us()))
        ran = _compute_ops_run(before, Counter(npu.DEVICE.stats.ops_run), npu.LAYOUT_OPS)
        shares.append(f"{ran}/{supported[-1] if supported else 0}")
    return {"first": shares[0], "second": shares[1], "later": shares[2], "first again": shares[3],
            "graphs": len(supported), "resident": npu.DEVICE.stats.programs_resident, "fallback warnings": fallbacks,
            "speed-up": [f"{x:.2f}x" for x in speedups[:2]], "first call s": [round(x, 1) for x in seconds[:2]]}


def kata8(entry) -> dict:
    aot = load_reference("08_export_aot", "aot.py")
    try:
        model = entry.build()
        ep = aot.lower(model, entry.inputs(0))
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "program.pt2"
            torch.export.save(ep, path)
            loaded = torch.export.load(path)
        errors = []
        for which in (0, 1):
            inputs = entry.inputs(which)
            if which:  # kata 8 makes the batch dynamic, nothing else: the second batch size at the first shape
                inputs = (inputs[0][(slice(None), *(slice(0, n) for n in entry.shapes[0][1:]))],)
            errors.append(float((loaded.module()(*inputs) - model(*inputs)).abs().max()))
        from katas.common import npu

        npu.DEVICE.reset()
        loaded.module()(*entry.inputs(0))  # a shape it ran before: every NPU island's program should still be kept
        return {"path": "ok", "max error": f"{max(errors):.1e}",
                "compiled on a repeat": npu.DEVICE.stats.programs_compiled}
    except Exception as error:  # noqa: BLE001
        return {"path": f"crash: {_short(error)}"}


def kata9(entry) -> dict:
    """SQNR after the sensitivity step, and the step's own figures, which kata 9's lesson quotes for MobileNetV2:
    each layer alone, the model at each start of the ranking tried, and the model with every layer int8, all over
    every calibration batch; the first batch alone before and after the step."""
    int8 = load_reference("09_int8_quantization", "int8.py")
    model = entry.build()
    inputs = entry.inputs(0)
    calibration = [entry.inputs(0, seed=s) for s in range(4)]

    starts: list[float] = []
    made: dict[tuple[str, ...], torch.fx.GraphModule] = {}

    def model_sqnr(kept: list[str]) -> float:  # as quantize_with_sensitivity measures it, every start recorded
        made[tuple(kept)] = int8.quantize_for_npu(model, inputs, calibration, keep_float=kept)
        starts.append(int8._sqnr_over(model, made[tuple(kept)], calibration))  # noqa: SLF001 - the step's own measure
        return starts[-1]

    try:  # the sensitivity step (quantize_with_sensitivity, spelled out to keep its figures): the fewest worst layers
        # kept float until the model reaches 20 dB over the calibration batches
        sensitivity = int8.layer_sensitivity(model, inputs, calibration)
        kept = int8.choose_float_layers(sensitivity, model_sqnr)
        quantized = made[tuple(kept)]  # choose_float_layers returns a start it tried
        with torch.no_grad():
            return {"sqnr dB": round(int8.sqnr(model(*inputs), quantized(*inputs)), 1), "float layers": len(kept),
                    "every layer int8, first batch dB": round(int8.sqnr(model(*inputs), made[()](*inputs)), 1),
                    "every layer int8 dB": round(starts[0], 1),
                    "each layer alone dB": [round(db, 1) for _, db in sensitivity],
                    "starts tried dB": [round(db, 1) for db in starts]}
    except Exception as error:  # noqa: BLE001
        return {"sqnr dB": f"crash: {_short(error)}"}


def measure(name: str) -> dict:
    entry = REAL_MODELS[name]
    started = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graphs = _captures(entry)
        row = {"kata 1": kata1(entry, graphs), "kata 3": kata3(entry, graphs), "kata 4": kata4(entry, graphs)}
        for kata, fn in (("kata 5", kata5), ("kata 8", kata8), ("kata 9", kata9)):
            from katas.common import npu
            npu.DEVICE.release_all()  # each kata's runtime starts with an empty program memory, as under the checker
            try:
                row[kata] = fn(entry)
            except Exception as error:  # noqa: BLE001
                row[kata] = {"crash": _short(error), "where": traceback.format_exc().splitlines()[-3].strip()}
    row["seconds"] = round(time.perf_counter() - started, 1)
    return row


def _fraction_cell(per: dict) -> str:
    """Per-capture "a/b" results as one cell: the range, or the one value when every capture agrees."""
    values = [v for v in per.values() if "/" in v and not v.startswith("crash")]
    crashes = [f"{k}: {v}" for k, v in per.items() if v.startswith("crash")]
    cell = " · ".join(f"{k} {v}" for k, v in per.items() if v in values) if len(set(values)) > 1 else (values[0] if values else "—")
    return cell + ("; " + "; ".join(crashes) if crashes else "")


def _sqnr_cell(result: dict) -> str:
    """Kata 9's SQNR after the sensitivity step, and how many layers it kept float when it kept any."""
    sqnr, kept = result.get("sqnr dB", result), result.get("float layers", 0)
    return f"{sqnr} ({kept} layers kept float)" if kept else f"{sqnr}"


def _speed_cell(result: dict) -> str:
    """Kata 5's simulated speed-up at the two shapes, and how long each shape's first call took."""
    if "speed-up" not in result:
        return "—"
    return " · ".join(result["speed-up"]) + "; " + " · ".join(f"{s} s" for s in result["first call s"])


def render(table: dict) -> str:
    """The table in docs/real-models.md: one row per model, one column per kata."""
    lines = ["| model | kata 1: dialect right / captured | kata 3: pairs fused / present (the report on the rest) | kata 4: NPU nodes / call "
             "nodes, per capture | kata 5: NPU share (first, second shape, later, first again) | kata 8: export → "
             "save → load | kata 9: SQNR after the sensitivity step (bar 20 dB) | kata 5: simulated speed-up over the "
             "CPU (first, second shape); seconds of the first call at each |", "|---|---|---|---|---|---|---|---|"]
    for name, row in table.items():
        if name.startswith("_"):
            continue
        k1 = row["kata 1"]
        captured = {k: v for k, v in k1.items() if not v.startswith("capture failed")}
        right = sum(v == "right" for v in captured.values())
        wrong = "; ".join(f"{k}: {v}" for k, v in captured.items() if v != "right")
        k5 = row["kata 5"]
        shares = " · ".join(str(k5.get(k, "—")) for k in ("first", "second", "later", "first again"))
        k8 = row["kata 8"]
        k8_cell = (f"ok, max error {k8['max error']}, {k8.get('compiled on a repeat', '?')} compiled on a repeat"
                   if k8.get("path") == "ok" else k8.get("path", k8.get("crash", "—")))
        lines.append(f"| {name} | {right}/{len(captured)}" + (f" ({wrong})" if wrong else "") +
                     f" | {_fraction_cell(row['kata 3'])} | {_fraction_cell(row['kata 4'])} | {shares}"
                     f"{'; ' + str(k5['fallback warnings']) + ' fallback warnings' if k5.get('fallback warnings') else ''}"
                     f" | {k8_cell[:90]} | {_sqnr_cell(row['kata 9'])} | {_speed_cell(k5)} |")
    return "\n".join(lines)


def write_readme(table: dict) -> None:
    text = README.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    README.write_text(text[:start] + "\n" + render(table) + "\n" + text[end:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true",
                        help=f"write {RESULTS.relative_to(ROOT)} and the table in docs/real-models.md (every model)")
    parser.add_argument("--model", action="append", choices=sorted(REAL_MODELS), help="only these models")
    args = parser.parse_args()
    if args.write and args.model:
        parser.error("--write measures every model; leave out --model")
    table = {name: measure(name) for name in (args.model or REAL_MODELS)}
    print(render(table))
    if args.write:
        table["_inputs"] = {"fingerprint": fingerprint(), "files": list(INPUTS)}
        RESULTS.write_text(json.dumps(table, indent=1) + "\n")
        write_readme(table)
        print(f"wrote {RESULTS.relative_to(ROOT)} and the table in {README.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
