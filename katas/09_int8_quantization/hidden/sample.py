"""`make diff N=9` and `make graph N=9`: what each side's quantize_for_npu then lower_to_npu_int8 makes of three
models: one line per node of the lowered graph (int8 ops with their scales, quantize/dequantize at the edges of
what runs in float), and as pictures, the quantized graph before lowering beside each side's lowered graph,
int8 ops on the NPU orange, float ops on the CPU blue, quantize/dequantize pale."""
from __future__ import annotations

from pathlib import Path

import torch

from checker.kit import load_module
from checker.kit.samples import guarded, picture_or_failure
from katas.common.quiet import quiet

_HIDDEN = Path(__file__).parent
probes = load_module(_HIDDEN / "probes.py", "kata09_probes_for_sample")
MODELS = ("residual", "gelu_norm", "reused_linear")
QDQ = "quantized_decomposed."


def _short(value) -> str:
    if isinstance(value, torch.fx.Node):
        return value.name
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    return repr(value)


def _line(node: torch.fx.Node) -> str:
    target = probes._target_text(node)
    name = target.removeprefix("aten.").removeprefix(QDQ).removeprefix("kata.").removesuffix(".default")
    args = node.args[:3] if target.startswith(QDQ) else node.args  # (value, scale, zero point) say it all
    return f"{node.name} = {name}({', '.join(_short(a) for a in args)})"


def _quantized(module, recipe: str) -> torch.fx.GraphModule:
    with quiet():
        return module.quantize_for_npu(probes.build(recipe), probes.example(recipe), probes.calibration(recipe))


def _lowered(module, recipe: str) -> torch.fx.GraphModule:
    converted = _quantized(module, recipe)
    with quiet():
        return module.lower_to_npu_int8(converted)


def _lines(module, recipe: str) -> str:
    gm = _lowered(module, recipe)
    return "\n".join("  " + _line(n) for n in gm.graph.nodes if n.op == "call_function")


def sample_graphs(attempt, reference) -> tuple[str, str]:
    mine, theirs = [], []
    for recipe in MODELS:
        header = f"lower_to_npu_int8(quantize_for_npu(`{recipe}`: {probes.ZOO[recipe].text}))"
        theirs += [header, guarded(_lines, reference, recipe), ""]
        mine += [header, guarded(_lines, attempt, recipe), ""]
    return "\n".join(mine).rstrip(), "\n".join(theirs).rstrip()


def _kind(node: torch.fx.Node) -> str:
    target = probes._target_text(node)
    if node.op in ("placeholder", "output", "get_attr") or node.op == "call_module":
        return "io"
    if target.startswith(QDQ):
        return "qdq"
    if target in (probes.INT8_LINEAR, probes.INT8_ADD):
        return "npu"
    return "cpu"


def graph_pictures(attempt, reference, *, capture=None, model=None):
    """`make graph N=9`: for each model (`residual`, `gelu_norm`, `reused_linear`, or `model`), the reference's
    quantized graph before lowering, and each side's lowered graph."""
    from checker.kit.pictures import Panel, picture_of

    if capture not in (None, "export"):
        raise ValueError(f"kata 9 draws its own export (capture 'export'), not {capture!r}")
    if model is not None and model not in probes.ZOO:
        raise ValueError(f"no sample model {model!r}; kata 9 draws {', '.join(probes.ZOO)}")
    panels = []
    for recipe in [model] if model else MODELS:
        converted = _quantized(reference, recipe)
        before = picture_of(converted, "quantize_for_npu()", kind_of=_kind)  # drawn before the lowering rewrites it
        with quiet():
            theirs = picture_of(reference.lower_to_npu_int8(converted), "lower_to_npu_int8()", kind_of=_kind)
        mine = picture_or_failure(lambda: picture_of(_lowered(attempt, recipe), "lower_to_npu_int8()", kind_of=_kind))
        panels.append(Panel(f"`{recipe}`: {probes.ZOO[recipe].text}", mine, theirs, before))
    return panels
