"""Probes for kata 9's checks: everything that runs the attempt's code.

Models are recipes (a zoo name or an MLPSpec) built the same way on both sides. A probe builds the model here,
in the worker, hands it to the attempt, and returns plain data: node descriptions with their quantization
annotations, quantize/dequantize parameters, op names, outputs. checks.py rebuilds the same graphs in its own
process, computes eager's and the quantized graph's answers, reads the NPU's counters, and judges.

The lowering is tested on graphs quantized here by the spec's own quantizer (`SpecQuantizer`, the rules the
lesson states, with switches for the variants a lowering must refuse), so a mistake in the attempt's Quantizer
does not hide what its lowering does, and the other way round; and on such graphs edited so that each dequantize
carries other numbers than the quantize before it (EDITS), as a graph from another tool may.

Recipes: a zoo name, an MLPSpec (katas.common.strategies.mlp_specs), or an int8 program (plain data drawn by
katas.common.strategies.int8_programs: several inputs, `z + z`, in-place relu_ and add_, values also returned).
Calibration batches reach the attempt as a one-shot generator, in CALIBRATION_PLANS' orders.
"""
from __future__ import annotations

import copy
import math
import warnings
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from katas.common.models import MLPSpec, build_mlp
from katas.common.naming import target_name
from katas.common.pt2e import (
    DEQUANTIZE_PER_CHANNEL,
    DEQUANTIZE_PER_TENSOR,
    QUANTIZE_PER_TENSOR,
    MinMaxObserver,
    PerChannelMinMaxObserver,
    QuantizationAnnotation,
    QuantizationSpec,
    Quantizer,
    SharedQuantizationSpec,
    convert_pt2e,
    prepare_pt2e,
)
from katas.common.quiet import quiet

aten = torch.ops.aten
RELUS = (aten.relu.default, aten.relu_.default)  # the in-place forms are the int8 unit's patterns too
TENSOR_ADDS = (aten.add.Tensor, aten.add_.Tensor)
INT8_LINEAR = "kata.int8_linear.default"
INT8_ADD = "kata.int8_add.default"


# --- the models -------------------------------------------------------------------------------------------

class GeluNorm(nn.Module):
    """Linear -> GELU -> Linear -> LayerNorm -> Linear: GELU and LayerNorm have no int8 kernel."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(16, 32), nn.Linear(32, 16), nn.Linear(16, 4)
        self.norm = nn.LayerNorm(16)

    def forward(self, x):
        return self.fc3(self.norm(self.fc2(F.gelu(self.fc1(x)))))


class Gated(nn.Module):
    """fc1(x) * sigmoid(fc2(x)) + 0.5 -> fc3: mul and sigmoid run on the NPU in float, not in int8; the add of a
    number is not the int8 add of two tensors."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(16, 16), nn.Linear(16, 16), nn.Linear(16, 4)

    def forward(self, x):
        return self.fc3(self.fc1(x) * torch.sigmoid(self.fc2(x)) + 0.5)


class Residual(nn.Module):
    """h = relu(fc1(x)); fc3(fc2(h) + h): an add of two tensors quantized apart unless told otherwise."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(16, 32), nn.Linear(32, 32), nn.Linear(32, 4)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        return self.fc3(self.fc2(h) + h)


class ReusedLinear(nn.Module):
    """z = fc1(x); fc2(z + relu(z)): the Linear's output has two users, so the relu cannot ride on it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 4)

    def forward(self, x):
        z = self.fc1(x)
        return self.fc2(z + F.relu(z))


class ScaledSums(nn.Module):
    """a = fc1(x), b = fc2(x); fc3(torch.add(torch.add(a, b, alpha=-0.5), b, alpha=2.0)): adds with alpha, which
    the int8 add does not take."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(16, 16), nn.Linear(16, 16), nn.Linear(16, 4)

    def forward(self, x):
        a, b = self.fc1(x), self.fc2(x)
        return self.fc3(torch.add(torch.add(a, b, alpha=-0.5), b, alpha=2.0))


class Doubled(nn.Module):
    """z = fc1(x); fc2(z + z): an add whose two inputs are one node."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 4)

    def forward(self, x):
        z = self.fc1(x)
        return self.fc2(z + z)


class TwoInputs(nn.Module):
    """z = fc1(x); r = relu(z); g = fc2(y).relu_(); s = r + r; s += g; return fc3(s), z: two inputs, a Linear
    output also returned (so the relu cannot ride on it), z + z, and the in-place relu_ and add_ that export keeps
    (nn.ReLU(inplace=True), `+=`)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(16, 16), nn.Linear(16, 16), nn.Linear(16, 4)

    def forward(self, x, y):
        z = self.fc1(x)
        r = torch.relu(z)
        g = self.fc2(y).relu_()
        s = r + r
        s += g
        return self.fc3(s), z


def skewed() -> nn.Module:
    """Linear(16 -> 16) -> ReLU -> Linear(16 -> 4), where two of the first layer's output channels have weights 100x
    the others' and a bias that keeps them below zero (units that never fire, as training leaves some): one scale
    for the whole weight is set by those two rows, and the fourteen live rows round to a few codes."""
    model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
    with torch.no_grad():
        model[0].weight[:2] *= 100
        model[0].bias[:2] = -3000.0
    return model


@dataclass(frozen=True)
class Recipe:
    """A model of the zoo: how to build it, what it computes, how many Linears and tensor adds it holds."""

    build: Callable[[], nn.Module]
    text: str
    linears: int
    adds: int = 0  # adds of two tensors: each is one int8_add when its inputs share one scale
    inputs: int = 1
    train: bool = False  # handed to quantize_for_npu in training mode (its Dropout active), as a caller may


ZOO: dict[str, Recipe] = {
    "mlp": Recipe(lambda: nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)), "Linear -> ReLU -> Linear",
                  2),
    "no_bias": Recipe(lambda: nn.Sequential(nn.Linear(16, 32, bias=False), nn.ReLU(), nn.Linear(32, 8, bias=False)),
                      "Linear (no bias) -> ReLU -> Linear (no bias)", 2),
    "gelu_norm": Recipe(GeluNorm, "Linear -> GELU -> Linear -> LayerNorm -> Linear", 3),
    "gated": Recipe(Gated, "fc1(x) * sigmoid(fc2(x)) + 0.5 -> fc3", 3),
    "residual": Recipe(Residual, "h = relu(fc1(x)); fc3(fc2(h) + h)", 3, 1),
    "reused_linear": Recipe(ReusedLinear, "z = fc1(x); fc2(z + relu(z))", 2, 1),
    "scaled_sums": Recipe(ScaledSums, "a = fc1(x), b = fc2(x); fc3(torch.add(torch.add(a, b, alpha=-0.5), b, "
                                      "alpha=2.0))", 3, 0),
    "skewed": Recipe(skewed, "Linear with two rows 100x the rest -> ReLU -> Linear", 2),
    "doubled": Recipe(Doubled, "z = fc1(x); fc2(z + z)", 2, 1),
    "dropout": Recipe(lambda: nn.Sequential(nn.Linear(16, 32), nn.Dropout(0.5), nn.ReLU(), nn.Linear(32, 8)),
                      "Linear -> Dropout(0.5) -> ReLU -> Linear, handed over in training mode", 2, train=True),
    "two_inputs": Recipe(TwoInputs, "forward(x, y): z = fc1(x); r = relu(z); g = fc2(y).relu_(); s = r + r; "
                                    "s += g; return fc3(s), z", 3, 2, 2),
}
IN_FEATURES = 16
EXAMPLE_BATCH = 4
EVAL_BATCHES = (1, 5)  # neither is the example's batch
INPUT_SCALE = 3.0  # calibration and evaluation inputs are randn * INPUT_SCALE; the example input is randn
CALIBRATION_BATCHES = 8
CALIBRATION_ROWS = 16  # rows of each calibration batch: not the example's batch size
# How wide each calibration batch is, in order (times randn): every batch must reach the observers, whichever is
# widest, from a generator that can be read once.
CALIBRATION_PLANS = {
    "all 3x": (INPUT_SCALE,) * CALIBRATION_BATCHES,
    "the 8x batch first": (8.0,) + (1.0,) * (CALIBRATION_BATCHES - 1),
    "the 8x batch last": (1.0,) * (CALIBRATION_BATCHES - 1) + (8.0,),
}


def is_program(recipe: Any) -> bool:
    return isinstance(recipe, tuple) and recipe[:1] == ("program",)


def build(recipe: str | MLPSpec | tuple, seed: int = 0) -> nn.Module:
    """The model of `recipe`, weights drawn from `seed`, in eval mode (in training mode for a zoo recipe marked
    `train`: what the caller of quantize_for_npu hands over; eager answers and the spec's graphs use eval)."""
    if isinstance(recipe, MLPSpec):
        return build_mlp(recipe)
    if is_chain(recipe) or is_real(recipe):
        return sensitivity_build(recipe)
    if is_program(recipe):
        return (OneInputProgram if recipe[1] == 1 else TwoInputProgram)(recipe).eval()
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = ZOO[recipe].build()
        return model.train() if ZOO[recipe].train else model.eval()


def in_features(recipe: str | MLPSpec | tuple) -> int:
    if is_chain(recipe):
        return CHAIN_WIDTH
    if is_program(recipe):
        return recipe[2]
    return recipe.in_features if isinstance(recipe, MLPSpec) else IN_FEATURES


def inputs_of(recipe: str | MLPSpec | tuple) -> int:
    """How many inputs the model takes."""
    if is_chain(recipe):
        return 1
    if is_program(recipe):
        return recipe[1]
    return 1 if isinstance(recipe, MLPSpec) else ZOO[recipe].inputs


def _randn(recipe: str | MLPSpec | tuple, batch: int, seed: int, scale: float) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(batch, in_features(recipe), generator=generator) * scale
                 for _ in range(inputs_of(recipe)))


def example(recipe: str | MLPSpec | tuple) -> tuple[torch.Tensor, ...]:
    """The example inputs export sees: a small batch of unit-scale values."""
    return _randn(recipe, EXAMPLE_BATCH, 1, 1.0)


def calibration(recipe: str | MLPSpec | tuple, scale: float | tuple = INPUT_SCALE) -> list[tuple[torch.Tensor, ...]]:
    """Eight batches from the distribution the model will serve (INPUT_SCALE times wider than the example), or
    one batch per entry of `scale` when it is a tuple (CALIBRATION_PLANS)."""
    scales = scale if isinstance(scale, tuple) else (scale,) * CALIBRATION_BATCHES
    return [_randn(recipe, CALIBRATION_ROWS, 100 + i, s) for i, s in enumerate(scales)]


def calibration_stream(recipe: str | MLPSpec | tuple, scale: float | tuple = INPUT_SCALE):
    """The calibration batches as the attempt gets them: a generator, which can be read once."""
    return (batch for batch in calibration(recipe, scale))


def evaluation(recipe: str | MLPSpec | tuple, batch: int) -> tuple[torch.Tensor, ...]:
    """Fresh inputs from the serving distribution, at a batch size export never saw."""
    return _randn(recipe, batch, 7000 + batch, INPUT_SCALE)


def eager(recipe: str | MLPSpec | tuple) -> dict[int, Any]:
    model = build(recipe).eval()
    with torch.no_grad():
        return {b: model(*evaluation(recipe, b)) for b in EVAL_BATCHES}


# --- int8 programs (the fuzz's models) ---------------------------------------------------------------------

def program_plan(program: tuple) -> tuple[tuple[bool, ...], tuple[int, ...]]:
    """(in place or not, per step; the values returned) of an int8 program. The model returns every value no step
    reads, then the program's extra value. A step's in-place form is used only where it changes nothing: on a
    value that no other step reads and that is neither a model input nor returned."""
    _, inputs, _, steps, extra, _ = program
    readers: dict[int, set[int]] = {}
    for k, step in enumerate(steps):
        for source in _sources(step):
            readers.setdefault(source, set()).add(k)
    made = range(inputs, inputs + len(steps))
    outputs = [v for v in made if v not in readers]
    if extra is not None and extra not in outputs:
        outputs.append(extra)
    inplace = []
    for k, step in enumerate(steps):
        target = step[1]
        inplace.append(step[0] in ("relu", "add") and bool(step[-1]) and target >= inputs
                       and target not in outputs and readers.get(target) == {k})
    return tuple(inplace), tuple(outputs)


def _sources(step: tuple) -> tuple[int, ...]:
    return tuple(step[1:3]) if step[0] in ("add", "add_alpha") else (step[1],)


def program_counts(program: tuple) -> tuple[int, int]:
    """(Linears, adds of two tensors without alpha): the program's int8 patterns."""
    steps = program[3]
    return sum(s[0] == "linear" for s in steps), sum(s[0] == "add" for s in steps)


def describe_program(program: tuple) -> str:
    """An int8 program as the forward a person would write."""
    _, inputs, width, steps, _, seed = program
    inplace, outputs = program_plan(program)
    names = [f"x{i}" for i in range(inputs)] + [f"v{k}" for k in range(len(steps))]
    lines = [f"forward({', '.join(names[:inputs])}), each input of shape (batch, {width}), weight seed {seed}:"]
    for k, step in enumerate(steps):
        kind, src = step[0], names[step[1]]
        if kind == "linear":
            text = f"fc{k}({src})   # Linear({width} -> {width}, {'bias' if step[2] else 'no bias'})"
        elif kind == "relu":
            text = f"{src}.relu_()   # in place" if inplace[k] else f"torch.relu({src})"
        elif kind == "gelu":
            text = f"F.gelu({src})"
        elif kind == "add_scalar":
            text = f"{src} + 0.5"
        elif kind == "add":
            other = names[step[2]]
            text = f"{src}.add_({other})   # {src} += {other}, in place" if inplace[k] else f"{src} + {other}"
        else:
            text = f"torch.add({src}, {names[step[2]]}, alpha=-0.5)"
        lines.append(f"  {names[inputs + k]} = {text}")
    lines.append(f"  return {', '.join(names[v] for v in outputs)}")
    return "\n".join(lines)


class ProgramModel(nn.Module):
    """The model an int8 program describes (see describe_program)."""

    def __init__(self, program: tuple) -> None:
        super().__init__()
        _, self.inputs, width, self.steps, _, seed = program
        self.inplace, self.outputs = program_plan(program)
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            for k, step in enumerate(self.steps):
                if step[0] == "linear":
                    setattr(self, f"fc{k}", nn.Linear(width, width, bias=step[2]))

    def compute(self, xs: tuple) -> Any:
        values = list(xs)
        for k, step in enumerate(self.steps):
            kind, src = step[0], values[step[1]]
            if kind == "linear":
                value = getattr(self, f"fc{k}")(src)
            elif kind == "relu":
                value = src.relu_() if self.inplace[k] else torch.relu(src)
            elif kind == "gelu":
                value = F.gelu(src)
            elif kind == "add_scalar":
                value = src + 0.5
            elif kind == "add":
                value = src.add_(values[step[2]]) if self.inplace[k] else src + values[step[2]]
            else:
                value = torch.add(src, values[step[2]], alpha=-0.5)
            values.append(value)
        out = tuple(values[v] for v in self.outputs)
        return out[0] if len(out) == 1 else out


class OneInputProgram(ProgramModel):
    def forward(self, x0):
        return self.compute((x0,))


class TwoInputProgram(ProgramModel):
    def forward(self, x0, x1):  # export needs each input named: no *args
        return self.compute((x0, x1))


def delayed_relu_program(gap: int, inputs: int, in_place: bool) -> tuple:
    """v0 = fc0(x0); then `gap` Linears of the last input; then relu(v0), v0's only user; then a Linear of that.
    Export keeps the forward's order, so `gap` nodes sit between the linear and the relu that rides on it."""
    steps = [("linear", 0, True)] + [("linear", inputs - 1, True) for _ in range(gap)]
    steps += [("relu", inputs, in_place), ("linear", inputs + gap + 1, True)]
    return ("program", inputs, 8, tuple(steps), None, 9 + gap)


# Models whose riding relus are not the node after their linear (one gap and two inputs; two, in place; three).
DELAYED_RELUS = tuple(delayed_relu_program(gap, inputs, in_place)
                      for gap, inputs, in_place in ((1, 2, False), (2, 1, True), (3, 2, True)))


def patterns_of(recipe: str | tuple) -> tuple[int, int]:
    """(Linears, adds of two tensors without alpha) of a zoo recipe or an int8 program: its int8 patterns."""
    return program_counts(recipe) if is_program(recipe) else (ZOO[recipe].linears, ZOO[recipe].adds)


def riding_relus(recipe: str | tuple) -> tuple[int, int]:
    """(relus that are their linear's only user, relus in all) of a zoo recipe or an int8 program."""
    if is_program(recipe):
        steps, inputs = recipe[3], recipe[1]
        _, outputs = program_plan(recipe)
        readers: dict[int, set[int]] = {}
        for k, step in enumerate(steps):
            for source in _sources(step):
                readers.setdefault(source, set()).add(k)
        relus = [k for k, step in enumerate(steps) if step[0] == "relu"]
        riding = [k for k in relus if steps[k][1] >= inputs and steps[steps[k][1] - inputs][0] == "linear"
                  and readers.get(steps[k][1]) == {k} and steps[k][1] not in outputs]
        return len(riding), len(relus)
    graph = spec_exported(recipe).graph
    relus = [n for n in graph.nodes if n.op == "call_function" and n.target in RELUS]
    riding = [r for r in relus if isinstance(r.args[0], torch.fx.Node) and r.args[0].op == "call_function"
              and r.args[0].target is aten.linear.default and len(r.args[0].users) == 1]
    return len(riding), len(relus)


def run(module: Callable, recipe: str | MLPSpec) -> dict[int, Any]:
    """`module`'s output per evaluation batch, or the error's text."""
    results: dict[int, Any] = {}
    for b in EVAL_BATCHES:
        try:
            with torch.no_grad():
                results[b] = module(*evaluation(recipe, b))
        except Exception as exc:  # noqa: BLE001 - the check reports it
            results[b] = f"{type(exc).__name__}: {str(exc).strip()[:500]}"
    return results


# --- the spec's own graphs --------------------------------------------------------------------------------

_SPEC_EXPORTS: dict[Any, torch.fx.GraphModule] = {}


def spec_exported(recipe: str | MLPSpec) -> torch.fx.GraphModule:
    """The recipe exported with a dynamic batch, as `ep.module()`: the graph a Quantizer annotates. A copy each
    call (copying takes a millisecond; exporting again, a hundred)."""
    if recipe not in _SPEC_EXPORTS:
        dynamic = tuple({0: torch.export.Dim.AUTO} for _ in range(inputs_of(recipe)))
        with quiet():
            exported = torch.export.export(build(recipe).eval(), example(recipe), dynamic_shapes=dynamic)
        _SPEC_EXPORTS[recipe] = exported.module()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # copying an exported module's pytree specs warns of a deprecation
        return copy.deepcopy(_SPEC_EXPORTS[recipe])


def _activation_spec(dtype: str = "int8") -> QuantizationSpec:
    low, high = {"int8": (-128, 127), "uint8": (0, 255), "int8_narrow": (-127, 127)}[dtype]
    return QuantizationSpec(dtype=getattr(torch, dtype.removesuffix("_narrow")), quant_min=low, quant_max=high, qscheme=torch.per_tensor_affine,
                            is_dynamic=False, observer_or_fake_quant_ctr=MinMaxObserver)


# The weight ranges the lesson allows: symmetric on [-127, 127], or on every int8 code, [-128, 127].
WEIGHT_RANGES = {"symmetric": -127, "symmetric_full_range": -128}


def _weight_spec(scheme: str) -> QuantizationSpec:
    """"symmetric" (the device's, on [-127, 127]), "symmetric_full_range" (on [-128, 127]), "affine" (zero points),
    "input_channels" (a scale per column, ch_axis=1), "int16" (per output channel, symmetric, zero points 0, but
    int16 codes on [-32767, 32767]), "per_tensor" (int8 symmetric, one scale for the whole weight)."""
    if scheme == "per_tensor":
        return QuantizationSpec(dtype=torch.int8, quant_min=-127, quant_max=127, qscheme=torch.per_tensor_symmetric,
                                is_dynamic=False, observer_or_fake_quant_ctr=MinMaxObserver)
    if scheme == "int16":
        return QuantizationSpec(dtype=torch.int16, quant_min=-32767, quant_max=32767,
                                qscheme=torch.per_channel_symmetric, ch_axis=0, is_dynamic=False,
                                observer_or_fake_quant_ctr=PerChannelMinMaxObserver)
    qscheme = torch.per_channel_affine if scheme == "affine" else torch.per_channel_symmetric
    return QuantizationSpec(dtype=torch.int8, quant_min=WEIGHT_RANGES.get(scheme, -127), quant_max=127,
                            qscheme=qscheme,
                            ch_axis=1 if scheme == "input_channels" else 0, is_dynamic=False,
                            observer_or_fake_quant_ctr=PerChannelMinMaxObserver)


class SpecQuantizer(Quantizer):
    """The lesson's rules, with switches for the graphs a lowering must leave alone or handle:
    `share_add=False` quantizes an add's two inputs apart (so their scales differ); `weights="symmetric_full_range"`
    quantizes weights on [-128, 127] (the lesson allows it), `weights="affine"` gives weights zero points, `weights="input_channels"` a scale per column (ch_axis=1); `activations="uint8"`
    quantizes activations to uint8 (the x86 habit), `activations="int8_narrow"` to int8 on [-127, 127] (still the
    int8 unit's: the guards do not look at ranges), `activations="float_output"` leaves float the output of the
    linear that makes the model's output, `activations="relu_past_a_second_reader"` lets a relu ride on its linear
    even when the linear has another reader (the single-user guard forgotten: a graph a lowering must not fuse).
    Linear inputs, linear or fused-relu outputs, adds of two tensors."""

    def __init__(self, share_add: bool = True, weights: str = "symmetric", activations: str = "int8") -> None:
        super().__init__()
        self.share_add, self.weights = share_add, weights
        self.float_output = activations == "float_output"
        self.relu_past_a_second_reader = activations == "relu_past_a_second_reader"
        self.activation_dtype = activations if activations in ("uint8", "int8_narrow") else "int8"

    def _act(self) -> QuantizationSpec:
        return _activation_spec(self.activation_dtype)

    def annotate(self, model: torch.fx.GraphModule) -> torch.fx.GraphModule:
        for node in model.graph.nodes:
            if node.op != "call_function":
                continue
            if node.target is aten.linear.default:
                users = list(node.users)
                relu = users[0] if len(users) == 1 and users[0].target in RELUS else None
                if self.relu_past_a_second_reader:
                    relu = next((u for u in users if u.target in RELUS), None)
                float_output = self.float_output and any(u.op == "output" for u in users)
                node.meta["quantization_annotation"] = QuantizationAnnotation(
                    input_qspec_map={node.args[0]: self._act(), node.args[1]: _weight_spec(self.weights)},
                    output_qspec=None if relu or float_output else self._act(), _annotated=True)
                if relu is not None:
                    relu.meta["quantization_annotation"] = QuantizationAnnotation(output_qspec=self._act(),
                                                                                  _annotated=True)
            elif node.target in TENSOR_ADDS and all(isinstance(a, torch.fx.Node) for a in node.args[:2]):
                first, second = node.args[:2]
                inputs = {first: self._act()}
                if second is not first:
                    inputs[second] = SharedQuantizationSpec((first, node)) if self.share_add else self._act()
                node.meta["quantization_annotation"] = QuantizationAnnotation(
                    input_qspec_map=inputs, output_qspec=self._act(), _annotated=True)
        return model

    def validate(self, model: torch.fx.GraphModule) -> None:
        pass


_SPEC_CONVERTED: dict[Any, torch.fx.GraphModule] = {}

# Edits of a converted graph: each dequantize_per_tensor gets other numbers than the quantize before it (convert_pt2e
# writes the same ones; another tool, or a person, may not). A lowering that reads a number from the wrong node
# then computes something else than the graph it was given.
EDITS = {
    "none": None,
    "dequantize numbers differ from their quantize's": (1.5, 3),  # every dequantize: scale x1.5, zero point + 3
}


def edit_dequantize_numbers(gm: torch.fx.GraphModule, scale_factor: float, zero_point_shift: int) -> None:
    """Every int8 dequantize_per_tensor reads its codes with scale * scale_factor and zero_point + shift."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is DEQUANTIZE_PER_TENSOR:
            args = list(node.args)
            args[1] = float(args[1]) * scale_factor
            args[2] = max(args[3], min(args[4], int(args[2]) + zero_point_shift))
            node.args = tuple(args)
    gm.recompile()


def moved_scale(scale: float, how: float | str) -> float:
    """`scale` times a factor, or moved by whole float64 ULPs ("ulp+1", "ulp-1"): the smallest change a float has."""
    if isinstance(how, str):
        steps = int(how.removeprefix("ulp"))
        for _ in range(abs(steps)):
            scale = math.nextafter(scale, math.inf if steps > 0 else -math.inf)
        return scale
    return scale * how


def edit_add_second_input(gm: torch.fx.GraphModule, scale_edit: float | str, zero_point_shift: int) -> None:
    """The second dequantize of every add of two distinct int8 dequantize nodes reads its codes with its scale moved
    (moved_scale: a factor, or a float64 ULP) and zero_point moved by the shift (the other way when that leaves the
    range): the add's two inputs no longer share one (scale, zero_point), by as little as the edit says."""
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target not in TENSOR_ADDS:
            continue
        first, second = node.args[:2]
        if not all(isinstance(a, torch.fx.Node) and a.target is DEQUANTIZE_PER_TENSOR for a in (first, second)) \
                or first is second:
            continue
        if len(second.users) > 1:  # a dequantize read by another node too: edit a copy for the add alone
            with gm.graph.inserting_after(second):
                second = gm.graph.call_function(DEQUANTIZE_PER_TENSOR, second.args, dict(second.kwargs))
            node.replace_input_with(node.args[1], second)
        args = list(second.args)
        args[1] = moved_scale(float(args[1]), scale_edit)
        zero_point = int(args[2]) + zero_point_shift
        args[2] = zero_point if args[3] <= zero_point <= args[4] else int(args[2]) - zero_point_shift
        second.args = tuple(args)
    gm.recompile()


def retype_add_input(gm: torch.fx.GraphModule, position: int, dtype: str) -> None:
    """The value read by input `position` of the first add of two distinct int8 dequantize nodes: its quantize and
    every dequantize reading it become `dtype` (uint8 on [0, 255], or int16 on int8's range), with the same scale
    and zero point. The add's two inputs then share one (scale, zero_point) but not one dtype: the shared observer
    gave them one range, another tool another container."""
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target not in TENSOR_ADDS:
            continue
        inputs = node.args[:2]
        if not all(isinstance(a, torch.fx.Node) and a.target is DEQUANTIZE_PER_TENSOR and a.args[5] == torch.int8
                   for a in inputs) or inputs[0] is inputs[1]:
            continue
        q = inputs[position].args[0]
        low, high = {"uint8": (0, 255), "int16": (-128, 127)}[dtype]
        for edited in (q, *[u for u in q.users if u.target is DEQUANTIZE_PER_TENSOR]):
            args = list(edited.args)
            args[3], args[4], args[5] = low, high, getattr(torch, dtype)
            edited.args = tuple(args)
        break
    gm.recompile()


def retype_to_uint8(gm: torch.fx.GraphModule, which: str) -> None:
    """The int8 quantize ending the first (`which="first"`) or the last (`"last"`) pattern of the graph, and the
    dequantize nodes reading it, become uint8 (zero point + 128, range [0, 255]): the same numbers, another dtype,
    as a graph another tool quantized value by value may hold. The pattern it ends, and those it feeds, are then
    not the int8 unit's."""
    ends = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is QUANTIZE_PER_TENSOR
            and n.args[5] == torch.int8 and isinstance(n.args[0], torch.fx.Node)
            and n.args[0].op == "call_function"]
    q = ends[0] if which == "first" else ends[-1]
    for node in (q, *[u for u in q.users if u.target is DEQUANTIZE_PER_TENSOR]):
        args = list(node.args)
        args[2], args[3], args[4], args[5] = int(args[2]) + 128, 0, 255, torch.uint8
        node.args = tuple(args)
    gm.recompile()


def retype_weights(gm: torch.fx.GraphModule, dtype: str) -> None:
    """Every weight's dequantize_per_channel, and the constant it reads, become `dtype` with zero points still 0 and
    one scale per output channel: "int16" keeps int8's codes and range ([-128, 127], another container), "uint8"
    stores the codes' absolute values on [0, 255]. Only the dtype is then not the int8 linear's."""
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is not DEQUANTIZE_PER_CHANNEL:
            continue
        codes = torch.fx.graph_module._get_attr(gm, node.args[0].target)  # noqa: SLF001
        if dtype == "uint8":
            codes, low, high = codes.to(torch.int16).abs().to(torch.uint8), 0, 255
        else:
            codes, low, high = codes.to(getattr(torch, dtype)), -128, 127
        torch.fx.graph_module._assign_attr(codes, gm, node.args[0].target)  # noqa: SLF001
        args = list(node.args)
        args[4], args[5], args[6] = low, high, getattr(torch, dtype)
        node.args = tuple(args)
    gm.recompile()


# One output channel of every weight, other than the first: a guard that reads only the first channel's numbers (or
# its first few) misses it. "middle" is channel rows // 2, "last" is rows - 1.
WEIGHT_CHANNELS = ("middle", "last")


def _channel(rows: int, which: str) -> int:
    return rows // 2 if which == "middle" else rows - 1


def edit_weight_channel(gm: torch.fx.GraphModule, which: str, what: str) -> None:
    """In every weight's dequantize_per_channel, one output channel (`which`: the middle or the last row) gets other
    numbers than the rest: `what="zero point"` gives it a zero point (+3 in the middle, -3 last: a weight with a zero
    point, so not the int8 linear's, though its first channel's is 0); `what="scale and range"` multiplies its scale
    by 4 and moves its most negative code to -128 (still int8, per output channel, zero points 0: the int8 linear's,
    which must read every channel's own scale)."""
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is not DEQUANTIZE_PER_CHANNEL:
            continue
        codes, scales, zero_points = (torch.fx.graph_module._get_attr(gm, a.target)  # noqa: SLF001
                                      for a in node.args[:3])
        row = _channel(codes.shape[0], which)
        if what == "zero point":
            zero_points = zero_points.clone()
            zero_points[row] = 3 if which == "middle" else -3
            torch.fx.graph_module._assign_attr(zero_points, gm, node.args[2].target)  # noqa: SLF001
        else:
            scales, codes = scales.clone(), codes.clone()
            scales[row] *= 4
            codes[row, int(codes[row].argmin())] = -128
            torch.fx.graph_module._assign_attr(scales, gm, node.args[1].target)  # noqa: SLF001
            torch.fx.graph_module._assign_attr(codes, gm, node.args[0].target)  # noqa: SLF001
    gm.recompile()


# Another reader of the op that ends a pattern, besides its int8 quantize (the lesson's guard: "a per-tensor
# quantize that is its op's only reader"): which op (a relu riding on its linear, a bare linear, an add), what
# reads it too, and where that reader sits, before the quantize (first among the op's users and in graph order) or
# after it.
READER_OPS = ("relu", "linear", "add")
READERS = ("a float op", "the graph output", "a second quantize")


def _add_output(gm: torch.fx.GraphModule, value: torch.fx.Node) -> None:
    """`value` becomes one more output of the graph (the output node reads it)."""
    out = next(n for n in gm.graph.nodes if n.op == "output")
    values = tuple(out.args[0]) + (value,)
    out.args = (values,)
    spec = torch.utils._pytree.tree_flatten(tuple(range(len(values))))[1]
    gm.graph._codegen.pytree_info = gm.graph._codegen.pytree_info._replace(out_spec=spec)  # noqa: SLF001
    gm._out_spec = spec  # noqa: SLF001


def add_second_reader(gm: torch.fx.GraphModule, op: str, reader: str, first: bool) -> None:
    """The first `op` of the graph whose only reader is an int8 quantize (a relu riding on its linear, a linear
    with no relu, an add) gets a second reader: `reader` is "a float op" (the mean of its rows, subtracted from the
    model's first output), "the graph output" (returned as one more output), or "a second quantize" (int8, twice
    the scale, dequantized into the same mean). `first`: the reader sits before the quantize (first among the op's
    users, and right after the op in graph order), else after it. That pattern is then not the int8 unit's: a reader
    needs the float value."""
    targets = {"relu": RELUS, "linear": (aten.linear.default,), "add": TENSOR_ADDS}[op]
    node = next(n for n in gm.graph.nodes if n.op == "call_function" and n.target in targets
                and len(n.users) == 1 and next(iter(n.users)).target is QUANTIZE_PER_TENSOR
                and next(iter(n.users)).args[5] == torch.int8)
    q = next(iter(node.users))
    output = next(n for n in gm.graph.nodes if n.op == "output")
    if reader == "the graph output":
        _add_output(gm, node)
    else:
        with gm.graph.inserting_after(node if first else q):
            if reader == "a second quantize":
                scale, zero_point, low, high = q.args[1] * 2, q.args[2], q.args[3], q.args[4]
                q2 = gm.graph.call_function(QUANTIZE_PER_TENSOR, (node, scale, zero_point, low, high, torch.int8))
                with gm.graph.inserting_after(q2):
                    value = gm.graph.call_function(DEQUANTIZE_PER_TENSOR,
                                                   (q2, scale, zero_point, low, high, torch.int8))
            else:
                value = node
        with gm.graph.inserting_before(output):
            mean = gm.graph.call_function(aten.mean.dim, (value, [-1], True))
            first_output = output.args[0][0]
            moved = gm.graph.call_function(aten.sub.Tensor, (first_output, mean))
        output.args = ((moved, *output.args[0][1:]),)
    if first:
        q.args = tuple(q.args)  # set again: the quantize becomes the op's last user, the new reader its first
    gm.recompile()


# Edits of a converted graph that a lowering's guards must see (the int8 add reads ONE scale and zero point; the
# int8 ops read and write int8 only): name -> (edit, its arguments). checks.py counts the patterns each edited graph
# still holds by the lesson's guards.
# How an add's second dequantize differs from its first in scale: by 0.5 %, 0.01 %, or one float64 ULP either way
# (the smallest change a float has: "compare them exactly" means any difference, however small).
ADD_SCALE_EDITS = {"x1.005": 1.005, "x1.0001": 1.0001, "one float64 ULP larger": "ulp+1",
                   "one float64 ULP smaller": "ulp-1"}
ADD_INPUT_DTYPES = ("uint8", "int16")  # another container for one input of an add, its scale and zero point kept
WEIGHT_DTYPES = ("int16", "uint8")  # another container for the weights, their zero points 0 and axis 0 kept
def reader_edit(op: str, reader: str, first: bool) -> str:
    """The name of add_second_reader's edit."""
    what = {"relu": "the relu riding on a linear", "linear": "a linear (no relu)", "add": "an add"}[op]
    return f"{what} is read by {reader} too, {'before' if first else 'after'} its int8 quantize"


GUARD_EDITS = {
    "an add's second dequantize: zero point moved by 4, scale kept": (edit_add_second_input, (1.0, 4)),
    **{f"an add's second dequantize: scale {text}, zero point kept": (edit_add_second_input, (how, 0))
       for text, how in ADD_SCALE_EDITS.items()},
    "the first pattern's output quantized to uint8": (retype_to_uint8, ("first",)),
    "the last pattern's output quantized to uint8": (retype_to_uint8, ("last",)),
    **{f"input {position} of an add quantized to {dtype}, its scale and zero point kept":
       (retype_add_input, (position, dtype)) for dtype in ADD_INPUT_DTYPES for position in (0, 1)},
    **{f"every weight stored as {dtype}, zero points 0, one scale per output channel": (retype_weights, (dtype,))
       for dtype in WEIGHT_DTYPES},
    **{f"every weight's {which} output channel has a zero point ({'+3' if which == 'middle' else '-3'}), the "
       f"others 0": (edit_weight_channel, (which, "zero point")) for which in WEIGHT_CHANNELS},
    **{f"every weight's {which} output channel has its scale multiplied by 4 and a code at -128": (
        edit_weight_channel, (which, "scale and range")) for which in WEIGHT_CHANNELS},
    **{reader_edit(op, reader, first): (add_second_reader, (op, reader, first))
       for op, reader, first in [(op, reader, (i + j) % 2 == 1) for i, op in enumerate(READER_OPS)
                                 for j, reader in enumerate(READERS)]},
}


def spec_converted(recipe: str | MLPSpec, share_add: bool = True, weights: str = "symmetric",
                   activations: str = "int8", edit: str = "none") -> torch.fx.GraphModule:
    """The recipe quantized by SpecQuantizer and calibrated on `calibration(recipe)`, then edited (EDITS): the graph
    a lowering gets. The same graph on both sides of the process boundary (every step is deterministic); a copy
    each call."""
    key = (recipe, share_add, weights, activations, edit)
    if key not in _SPEC_CONVERTED and edit != "none":  # an edit of the graph quantized without one
        converted = spec_converted(recipe, share_add, weights, activations)
        if edit in GUARD_EDITS:
            function, arguments = GUARD_EDITS[edit]
            function(converted, *arguments)
        else:
            edit_dequantize_numbers(converted, *EDITS[edit])
        _SPEC_CONVERTED[key] = converted
    if key not in _SPEC_CONVERTED:
        with quiet():
            prepared = prepare_pt2e(spec_exported(recipe), SpecQuantizer(share_add, weights, activations))
            with torch.no_grad():
                for batch in calibration(recipe):
                    prepared(*batch)
            converted = convert_pt2e(prepared)
        _SPEC_CONVERTED[key] = converted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return copy.deepcopy(_SPEC_CONVERTED[key])


# --- describing graphs ------------------------------------------------------------------------------------

def _target_text(node: torch.fx.Node) -> str:
    if isinstance(node.target, torch._ops.OpOverloadPacket):
        return f"{node.target}.default"  # torch.ops.kata.int8_linear called as a packet runs its default overload
    return target_name(node.target)


def describe_spec(spec: Any) -> dict | None:
    """A QuantizationSpec (or a shared/derived one) as plain data."""
    if spec is None:
        return None
    if isinstance(spec, SharedQuantizationSpec):
        edge = spec.edge_or_node
        names = ([e.name if isinstance(e, torch.fx.Node) else str(e) for e in edge] if isinstance(edge, tuple)
                 else [edge.name if isinstance(edge, torch.fx.Node) else str(edge)])
        return {"kind": "shared", "edge": names}
    if not isinstance(spec, QuantizationSpec):
        return {"kind": type(spec).__name__}
    return {"kind": "spec", "dtype": str(spec.dtype).removeprefix("torch."),
            "qscheme": str(spec.qscheme).removeprefix("torch.") if spec.qscheme is not None else None,
            "ch_axis": spec.ch_axis, "quant_min": spec.quant_min, "quant_max": spec.quant_max,
            "dynamic": bool(spec.is_dynamic)}


def describe_annotations(gm: torch.fx.GraphModule) -> list[dict]:
    """Every call_function node: its target, its users, and the annotation a Quantizer left on it (inputs by
    argument position: 0 for the first argument, 1 for the second, ...)."""
    described = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        annotation = node.meta.get("quantization_annotation")
        entry = {"name": node.name, "target": _target_text(node),
                 "users": [u.name for u in node.users], "annotated": annotation is not None,
                 "tensor_args": [isinstance(a, torch.fx.Node) for a in node.args],
                 "args_same": len(node.args) > 1 and node.args[0] is node.args[1],
                 "inputs": {}, "output": None}
        if annotation is not None:
            for source, spec in (getattr(annotation, "input_qspec_map", None) or {}).items():
                positions = [i for i, a in enumerate(node.args) if a is source] or ["kwarg"]
                for position in positions:
                    entry["inputs"][str(position)] = describe_spec(spec)
                    if isinstance(source, torch.fx.Node):
                        entry["inputs"][str(position)] = {**entry["inputs"][str(position)], "source": source.name}
            entry["output"] = describe_spec(getattr(annotation, "output_qspec", None))
        described.append(entry)
    return described


def _literal(value: Any) -> Any:
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


def describe_quantized(gm: torch.fx.GraphModule) -> list[dict]:
    """Every call_function node of a converted or lowered graph: target, its inputs (node names or literals), and
    for a per-tensor quantize/dequantize its (scale, zero_point, dtype)."""
    described = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        entry = {"name": node.name, "target": _target_text(node),
                 "args": [a.name if isinstance(a, torch.fx.Node) else _literal(a) for a in node.args],
                 "arg_ops": [a.op if isinstance(a, torch.fx.Node) else None for a in node.args],
                 "kwargs": {k: a.name if isinstance(a, torch.fx.Node) else _literal(a) for k, a in node.kwargs.items()},
                 "users": [u.name for u in node.users]}
        if node.target in (QUANTIZE_PER_TENSOR, DEQUANTIZE_PER_TENSOR):
            entry["qparams"] = [float(node.args[1]), int(node.args[2]), str(node.args[5]).removeprefix("torch.")]
        elif node.target is DEQUANTIZE_PER_CHANNEL:
            entry["qparams"] = ["per_channel", int(node.args[3]), str(node.args[6]).removeprefix("torch."),
                                *_per_channel_facts(gm, node)]
        described.append(entry)
    return described


def _per_channel_facts(gm: torch.fx.GraphModule, dq: torch.fx.Node) -> list[bool]:
    """[zero points all 0, one scale per row of the axis] of a dequantize_per_channel whose tensors are attributes."""
    def value(arg):
        if isinstance(arg, torch.fx.Node) and arg.op == "get_attr":
            return torch.fx.graph_module._get_attr(gm, arg.target)  # noqa: SLF001
        return None

    weight, scales, zero_points = (value(a) for a in dq.args[:3])
    if weight is None or scales is None or zero_points is None:
        return [False, False]
    axis = int(dq.args[3])
    rows = weight.shape[axis] if -weight.dim() <= axis < weight.dim() else -1
    return [not bool(zero_points.any()), scales.numel() == rows]


# --- probes ------------------------------------------------------------------------------------------------

def annotated(attempt: ModuleType, recipe: str | MLPSpec) -> list[dict]:
    """NPUQuantizer().annotate() on the spec's exported graph of `recipe`: every node's annotation."""
    gm = spec_exported(recipe)
    with quiet():
        quantizer = attempt.NPUQuantizer()
        quantizer.annotate(gm)
    return describe_annotations(gm)


def quantized(attempt: ModuleType, recipe: str | MLPSpec, calibration_scale: float | tuple = INPUT_SCALE) -> dict:
    """quantize_for_npu(model, example, calibration batches as a generator): what it returned, its nodes, its
    outputs."""
    with quiet():
        converted = attempt.quantize_for_npu(build(recipe), example(recipe),
                                             calibration_stream(recipe, calibration_scale))
    if not isinstance(converted, torch.fx.GraphModule):
        return {"type": type(converted).__name__}
    return {"type": "GraphModule", "nodes": describe_quantized(converted), "outputs": run(converted, recipe)}


def lowered(attempt: ModuleType, recipe: str | MLPSpec, share_add: bool = True, weights: str = "symmetric",
            activations: str = "int8", edit: str = "none") -> dict:
    """lower_to_npu_int8 on the spec's quantized graph of `recipe`: what it returned, its nodes, its outputs."""
    given = spec_converted(recipe, share_add, weights, activations, edit)
    with quiet():
        result = attempt.lower_to_npu_int8(given)
    if not isinstance(result, torch.fx.GraphModule):
        return {"type": type(result).__name__}
    return {"type": "GraphModule", "in_place": result is given, "nodes": describe_quantized(result),
            "outputs": run(result, recipe)}


def quantized_and_lowered(attempt: ModuleType, recipe: str | MLPSpec) -> dict:
    """The attempt's whole path: quantize_for_npu, then lower_to_npu_int8; the quantized graph's outputs (taken
    before lowering), the lowered graph's nodes and outputs."""
    with quiet():
        converted = attempt.quantize_for_npu(build(recipe), example(recipe), calibration_stream(recipe))
    if not isinstance(converted, torch.fx.GraphModule):
        return {"type": type(converted).__name__}
    quantized_outputs = run(converted, recipe)
    quantized_nodes = describe_quantized(converted)
    with quiet():
        result = attempt.lower_to_npu_int8(converted)
    if not isinstance(result, torch.fx.GraphModule):
        return {"type": type(result).__name__}
    return {"type": "GraphModule", "in_place": result is converted, "quantized_outputs": quantized_outputs,
            "quantized_nodes": quantized_nodes, "nodes": describe_quantized(result), "outputs": run(result, recipe)}


def sqnr_of(attempt: ModuleType, pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> list[Any]:
    """sqnr(reference, actual) for each pair, or the error's text."""
    values = []
    for reference, actual in pairs:
        try:
            value = attempt.sqnr(reference.clone(), actual.clone())
            values.append(float(value))
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - the check reports it
            values.append(f"{type(exc).__name__}: {str(exc)[:200]}")
    return values


# --- the sensitivity step (stage "sensitivity") ------------------------------------------------------------

CHAIN_WIDTH = 16
CHAIN_KINDS = ("linear", "linear_relu", "linear_shift", "offset")


def is_chain(recipe: Any) -> bool:
    return isinstance(recipe, tuple) and recipe[:1] == ("chain",)


def chain(kinds: tuple[str, ...], outliers: dict[int, float] | None = None, seed: int = 3) -> tuple:
    """A chain recipe: block k is `kinds[k]`; `outliers` gives the blocks whose output has two channels at -value
    (the layer that rounds everything else away), and the value."""
    return ("chain", tuple(kinds), tuple(sorted((outliers or {}).items())), seed)


class Chain(nn.Module):
    """h = x, then one block per kind:
      "linear"       h = gelu(fc_k(h))              one layer: the linear
      "linear_relu"  h = relu(fc_k(h))              one layer: the linear and the relu riding on it
      "linear_shift" h = gelu(fc_k(h) + 0.5)        one layer: the linear (the add of a number is no layer)
      "offset"       h = gelu(h + offset_k)         one layer: the add of a learned offset (a position embedding)
    A block with an outlier has two output channels far below zero before its GELU (a linear's weight rows 0 and
    bias -value there; an offset of -value there): units that never fire. GELU makes them 0 again, so the model's
    output does not see them; one int8 scale per tensor over [-value, max] does, and rounds the other channels to a
    few codes."""

    def __init__(self, recipe: tuple) -> None:
        super().__init__()
        _, self.kinds, outliers, seed = recipe
        outliers = dict(outliers)
        generator = torch.Generator().manual_seed(seed)
        width = CHAIN_WIDTH
        for k, kind in enumerate(self.kinds):
            if kind == "offset":
                offset = torch.randn(width, generator=generator) * 0.3
                if k in outliers:
                    offset[:2] = -outliers[k]
                setattr(self, f"offset{k}", nn.Parameter(offset))
                continue
            fc = nn.Linear(width, width)
            with torch.no_grad():
                fc.weight.copy_(torch.randn(width, width, generator=generator) / width ** 0.5)
                fc.bias.copy_(torch.randn(width, generator=generator) * 0.1)
                if k in outliers:
                    fc.weight[:2] = 0.0
                    fc.bias[:2] = -outliers[k]
            setattr(self, f"fc{k}", fc)

    def forward(self, x):
        h = x
        for k, kind in enumerate(self.kinds):
            if kind == "offset":
                h = F.gelu(h + getattr(self, f"offset{k}"))
            elif kind == "linear_relu":
                h = F.relu(getattr(self, f"fc{k}")(h))
            elif kind == "linear_shift":
                h = F.gelu(getattr(self, f"fc{k}")(h) + 0.5)
            else:
                h = F.gelu(getattr(self, f"fc{k}")(h))
        return h


def chain_layers(recipe: tuple) -> list[str]:
    """The layers of a chain as the exported graph names them, in graph order: linear, linear_1, ..., add, ..."""
    names, counts = [], {"linear": 0, "add": 0}
    for kind in recipe[1]:
        op = "add" if kind == "offset" else "linear"
        names.append(op if counts[op] == 0 else f"{op}_{counts[op]}")
        counts[op] += 1
        if kind == "linear_shift":  # its `+ 0.5` is an add node too, of a number: not a layer
            counts["add"] += 1
    return names


def chain_sensitive(recipe: tuple) -> list[str]:
    """The layers of a chain built with outlier channels, the widest outliers (the worst layer) first: what the
    sensitivity step keeps float on these models (each such layer alone takes the model under 20 dB)."""
    layers = chain_layers(recipe)
    return [layers[k] for k, _ in sorted(recipe[2], key=lambda pair: -pair[1])]


def describe_chain(recipe: tuple) -> str:
    _, kinds, outliers, seed = recipe
    outliers = dict(outliers)
    layers = chain_layers(recipe)
    lines = [f"forward(x), x of shape (batch, {CHAIN_WIDTH}), weight seed {seed}:"]
    for k, kind in enumerate(kinds):
        tail = (f"   # layer {layers[k]}: output channels 0 and 1 at -{outliers[k]:g} (units that never fire; "
                f"the GELU zeroes them)" if k in outliers else f"   # layer {layers[k]}")
        body = {"linear": f"F.gelu(fc{k}(h))", "linear_relu": f"F.relu(fc{k}(h))",
                "linear_shift": f"F.gelu(fc{k}(h) + 0.5)", "offset": f"F.gelu(h + offset{k})"}[kind]
        lines.append(f"  h = {body}{tail}")
    lines.append("  return h")
    return "\n".join(lines)


# The learner profile's models: which layer rounds the rest away (the first, a middle one, the last two; a Linear
# or an add), and how many must stay float (none, one, two).
SENSITIVITY_MODELS = {
    "first_linear": chain(("linear", "linear", "linear", "linear"), {0: 3000.0}),
    "middle_add": chain(("linear_shift", "offset", "linear_relu", "offset"), {1: 3000.0}),
    "last_two": chain(("linear_relu", "linear", "offset", "linear"), {2: 1000.0, 3: 300.0}),
    "none": chain(("linear", "offset", "linear_relu"), {}),
}
# keep_float sets the structure check quantizes with: (model, kept layers).
KEEP_FLOAT_CASES = (
    ("first_linear", ("linear",)),
    ("middle_add", ("add_1",)),
    ("relu_between", ("linear_1",)),
    ("last_two", ("add", "linear_2")),
    ("none", ()),
)
SENSITIVITY_MODELS["relu_between"] = chain(("linear_relu", "linear_relu", "linear"), {})


def real_recipe(name: str) -> tuple:
    return ("real", name)


def is_real(recipe: Any) -> bool:
    return isinstance(recipe, tuple) and recipe[:1] == ("real",)


def sensitivity_example(recipe: tuple) -> tuple[torch.Tensor, ...]:
    if is_real(recipe):
        from katas.common.real_models import REAL_MODELS
        return REAL_MODELS[recipe[1]].inputs(0)
    return example(recipe)


def sensitivity_calibration(recipe: tuple, plan: str = "all 3x") -> list[tuple[torch.Tensor, ...]]:
    """A chain's calibration batches (CALIBRATION_PLANS), or a real model's four (its first shape, seeds 0-3)."""
    if is_real(recipe):
        from katas.common.real_models import REAL_MODELS
        return [REAL_MODELS[recipe[1]].inputs(0, seed=s) for s in range(4)]
    return calibration(recipe, CALIBRATION_PLANS[plan])


def sensitivity_build(recipe: tuple) -> nn.Module:
    if is_real(recipe):
        from katas.common.real_models import REAL_MODELS
        return REAL_MODELS[recipe[1]].build()
    return Chain(recipe).eval()


def _outputs_on(module: Callable, batches: list[tuple]) -> list[Any]:
    outputs = []
    with torch.no_grad():
        for batch in batches:
            try:
                outputs.append(module(*batch))
            except Exception as exc:  # noqa: BLE001 - the check reports it
                outputs.append(f"{type(exc).__name__}: {str(exc).strip()[:500]}")
    return outputs


def _pairs(value: Any) -> Any:
    """A layer_sensitivity answer as plain data: a list of [name, float], or the type's name when it is not one."""
    try:
        return [[str(name), float(db)] for name, db in value]
    except Exception:  # noqa: BLE001 - the check reports what came back
        return f"{type(value).__name__}: {str(value)[:200]}"


def sensitivity(attempt: ModuleType, recipe: tuple, plan: str = "all 3x") -> dict:
    """layer_sensitivity(model, example, calibration batches as a generator), then, to judge its numbers, the
    attempt's quantize_for_npu with every other layer kept float, one run per layer it named: the outputs on the
    calibration batches."""
    with quiet():
        got = _pairs(attempt.layer_sensitivity(sensitivity_build(recipe), sensitivity_example(recipe),
                                               (b for b in sensitivity_calibration(recipe, plan))))
    alone: dict[str, Any] = {}
    names = [name for name, _ in got] if isinstance(got, list) else []
    for name in dict.fromkeys(names):
        with quiet():
            quantized = attempt.quantize_for_npu(sensitivity_build(recipe), sensitivity_example(recipe),
                                                 (b for b in sensitivity_calibration(recipe, plan)),
                                                 keep_float=[other for other in names if other != name])
        alone[name] = _outputs_on(quantized, sensitivity_calibration(recipe, plan))
    return {"sensitivity": got, "alone": alone}


def kept_float(attempt: ModuleType, recipe: tuple, keep: tuple[str, ...]) -> dict:
    """NPUQuantizer(keep_float=keep).annotate on the exported graph; quantize_for_npu(..., keep_float=keep), then
    lower_to_npu_int8: the annotations, both graphs' nodes, and outputs on the evaluation batches."""
    gm = spec_exported_chain(recipe)
    with quiet():
        attempt.NPUQuantizer(keep_float=list(keep)).annotate(gm)
    annotations = describe_annotations(gm)
    with quiet():
        converted = attempt.quantize_for_npu(sensitivity_build(recipe), sensitivity_example(recipe),
                                             (b for b in sensitivity_calibration(recipe)), keep_float=list(keep))
    if not isinstance(converted, torch.fx.GraphModule):
        return {"type": type(converted).__name__, "annotations": annotations}
    quantized_nodes, quantized_outputs = describe_quantized(converted), run(converted, recipe)
    calibration_outputs = _outputs_on(converted, sensitivity_calibration(recipe))
    with quiet():
        result = attempt.lower_to_npu_int8(converted)
    if not isinstance(result, torch.fx.GraphModule):
        return {"type": type(result).__name__, "annotations": annotations}
    return {"type": "GraphModule", "annotations": annotations, "quantized_nodes": quantized_nodes,
            "quantized_outputs": quantized_outputs, "calibration_outputs": calibration_outputs,
            "nodes": describe_quantized(result), "outputs": run(result, recipe),
            "lowered_calibration_outputs": _outputs_on(result, sensitivity_calibration(recipe))}


def with_sensitivity(attempt: ModuleType, recipe: tuple) -> dict:
    """quantize_with_sensitivity(model, example, calibration batches as a generator), then lower_to_npu_int8: the
    layers it kept float, the graph's nodes before and after lowering, outputs on the calibration batches."""
    batches = sensitivity_calibration(recipe)
    with quiet():
        answer = attempt.quantize_with_sensitivity(sensitivity_build(recipe), sensitivity_example(recipe),
                                                   (b for b in batches))
    if not (isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[0], torch.fx.GraphModule)):
        return {"type": type(answer).__name__}
    converted, kept = answer
    kept = [str(name) for name in kept]
    quantized_nodes, quantized_outputs = describe_quantized(converted), _outputs_on(converted, batches)
    with quiet():
        result = attempt.lower_to_npu_int8(converted)
    if not isinstance(result, torch.fx.GraphModule):
        return {"type": type(result).__name__}
    return {"type": "GraphModule", "kept": kept, "quantized_nodes": quantized_nodes,
            "quantized_outputs": quantized_outputs, "nodes": describe_quantized(result),
            "outputs": _outputs_on(result, batches)}


def chosen(attempt: ModuleType, cases: list[tuple[list, dict, float]]) -> list[Any]:
    """choose_float_layers(sensitivity, model_sqnr, bar) on plain data: model_sqnr(kept) is
    base + the sum of gains[name] over the kept layers (a gain may be negative: keeping a layer float can lower the
    model's SQNR, as on MobileNetV2). Each answer as a list of names, or the error's text."""
    answers = []
    for pairs, table, bar in cases:
        def model_sqnr(kept, table=table) -> float:
            kept = list(kept)
            unknown = [name for name in kept if name not in table["gains"]]
            if unknown:
                raise KeyError(f"model_sqnr was given {unknown!r}, which are not layers of the sensitivity list")
            return table["base"] + sum(table["gains"][name] for name in set(kept))
        try:
            if bar is None:  # the default bar: 20 dB
                answer = attempt.choose_float_layers([tuple(p) for p in pairs], model_sqnr)
            else:
                answer = attempt.choose_float_layers([tuple(p) for p in pairs], model_sqnr, bar)
            answers.append([str(name) for name in answer])
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - the check reports it
            answers.append(f"{type(exc).__name__}: {str(exc)[:300]}")
    return answers


_CHAIN_EXPORTS: dict[Any, torch.fx.GraphModule] = {}


def spec_exported_chain(recipe: tuple) -> torch.fx.GraphModule:
    """A chain (or real model) exported with a dynamic batch, as `ep.module()`: a copy each call."""
    if recipe not in _CHAIN_EXPORTS:
        with quiet():
            exported = torch.export.export(sensitivity_build(recipe), sensitivity_example(recipe),
                                           dynamic_shapes=({0: torch.export.Dim.AUTO},))
        _CHAIN_EXPORTS[recipe] = exported.module()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return copy.deepcopy(_CHAIN_EXPORTS[recipe])
