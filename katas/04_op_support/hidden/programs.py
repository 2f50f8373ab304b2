"""Kata 4's generated graphs: small model programs, described by plain data, captured in every dialect.

A `ProgramSpec` is a list of steps on a (batch, 4) tensor, a dtype, a capture, whether sizes stay symbolic, and
which kernels the device lacks (ops taken out of NPU_OPS). Each step is one of the lesson's axes: a Linear or a
module subclass at depth 1 or 2 (with or without a forward of its own), an activation as module, function, method
or in-place form (or with inplace=True, which is no in-place form), int64 index math, bool masks and 0-dim
tensors, a packet or an overload of the aten / kata / mylib / prims namespaces, a getitem on a tensor or on a
multi-output op, SymInt and SymFloat size arithmetic, torch.cond (nested too) and a no_grad block. `build_program`
makes the model, `program_inputs` its input, `describe_program` the text a learner sees, and `program_specs` draws
specs (Hypothesis) that every capture can take. The checks compare the attempt with the reference node by node
on these graphs, so a wrong rule fails on whichever step it breaks, and Hypothesis shrinks to the fewest steps.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import strategies as st

WIDTH = 4
BATCH = 3  # not WIDTH: Dynamo gives a batch equal to a static size that size, and no symbol


# --- module subclasses at depth 1 and 2 (defined in katas/common/zoo.py, so the worker can import them) -------

from katas.common.zoo import (  # noqa: E402
    InheritsScaledLinear, KeepsKeepsLinear, KeepsLinear, KeepsReLU, RestoresLinear, ScaledLinear, ShiftedReLU)

LINEAR_CLASSES = {
    "linear": nn.Linear,
    "linear_keeps": KeepsLinear,
    "linear_keeps_keeps": KeepsKeepsLinear,
    "linear_overrides": ScaledLinear,
    "linear_inherits_override": InheritsScaledLinear,
    "linear_restores_forward": RestoresLinear,
}
ACTIVATION_CLASSES = {"relu_keeps": KeepsReLU, "relu_keeps_overrides": ShiftedReLU}


class LeafSubclassTracer(torch.fx.Tracer):
    """symbolic_trace as a custom tracer does it: every subclass of a module class of the lesson's table is kept
    whole as one call_module node (torch.fx keeps only torch.nn's own classes by default)."""

    def is_leaf_module(self, m: nn.Module, qualname: str) -> bool:
        return isinstance(m, (nn.Linear, nn.ReLU)) or super().is_leaf_module(m, qualname)


# --- steps ----------------------------------------------------------------------------------------------------
# name -> what it computes on h (batch, 4); the Program's submodules are created from the name.

STEP_TEXT = {
    **{name: f"h = {cls.__name__}(4, 4)(h)" for name, cls in LINEAR_CLASSES.items()},
    **{name: f"h = {cls.__name__}()(h)" for name, cls in ACTIVATION_CLASSES.items()},
    "relu_module": "h = nn.ReLU()(h)",
    "relu_function": "h = torch.relu(h)",
    "relu_method": "h = h.relu()",
    "relu_inplace_method": "h = h.clone(); h.relu_()",
    "relu_inplace_function": "h = torch.relu_(h.clone())",
    "relu_module_inplace_keyword": "h = nn.ReLU(inplace=True)(h.clone())   (a keyword: still nn.ReLU)",
    "relu_function_inplace_keyword": "h = F.relu(h.clone(), inplace=True)   (a keyword: still F.relu)",
    "add": "h = h + fc(h)",
    "add_inplace_method": "h = h.clone(); h.add_(fc(h))",
    "add_inplace_operator": "h = h.clone(); h += fc(h)   (operator.iadd)",
    "aten_relu_packet": "h = torch.ops.aten.relu(h)",
    "aten_relu_overload": "h = torch.ops.aten.relu.default(h)",
    "aten_sigmoid_packet": "h = torch.ops.aten.sigmoid(h)",
    "aten_sin_packet": "h = torch.ops.aten.sin(h)",
    "aten_relu_inplace_packet": "h = torch.ops.aten.relu_(h.clone())",
    "kata_linear_gelu_packet": "h = torch.ops.kata.linear_gelu(h, w, b)",
    "kata_linear_gelu_overload": "h = torch.ops.kata.linear_gelu.default(h, w, b)",
    "mylib_gelu_packet": "h = torch.ops.mylib.gelu(h)",
    "mylib_gelu_overload": "h = torch.ops.mylib.gelu.default(h)",
    "prims_mul_overload": "h = torch.ops.prims.mul.default(h, h)   (torch's own prims namespace)",
    "index_tensor": "h = fc(h)[0] + h   (getitem on a tensor)",
    "index_rows": "h = fc(h)[:, 1:].sum(-1, keepdim=True) + h   (a slice getitem)",
    "unpack_max": "h = h - h.max(-1, keepdim=True)[0]   (getitem on a multi-output op)",
    "int_index_math": "h = h + ((h.argmax(-1, keepdim=True) + 1) * 2).to(h.dtype)   (int64 add and mul)",
    "bool_mask_math": "h = h + ((h > 0) * (h < 1) + (h > 1)).to(h.dtype)   (mul and add of bool tensors)",
    "zero_dim": "h = h * (torch.relu(h.sum()) * 2 + 1)   (relu, mul, add of a 0-dim tensor)",
    "size_symint": "n = h.shape[0]; h = h.reshape(n * 2, -1).reshape(n, -1)",
    "size_symfloat": "n = h.shape[0]; h = h.reshape(int(n * 1.0), -1)",
    "scale_by_size": "h = torch.relu(h * 2) * h.shape[0]   (a tensor times a size: its value is a tensor)",
    "cond": "h = torch.cond(h.sum() > 0, lambda t: fc(t).relu(), lambda t: fc(t).sigmoid(), (h,))",
    "cond_nested": "h = torch.cond(h.sum() > 0, lambda t: torch.cond(t.sum() > 1, relu∘fc, sigmoid∘fc, (t,)), "
                   "lambda t: -t, (h,))",
    "no_grad": "with torch.no_grad(): h = fc(h)",
}
STEPS = tuple(STEP_TEXT)
# what a capture cannot take: symbolic_trace traces no torch.cond and no int() of a size; plain Python in-place
# on a traced input is fine everywhere (each in-place step clones first, so no input is mutated)
NOT_SYMBOLIC_TRACE = frozenset({"cond", "cond_nested", "size_symint", "size_symfloat", "scale_by_size"})
# export with a Dim refuses int(n * 1.0) (its guard cannot hold for every batch size)
NOT_EXPORT = frozenset({"size_symfloat"})
# steps whose graph nodes only Dynamo keeps as-is (make_fx/export resolve a packet; export specialises
# int(n * 1.0) away) are still allowed there: they just give plain aten nodes
DTYPES = ("float32", "float64", "float16")
PROGRAM_CAPTURES = ("symbolic_trace", "dynamo", "make_fx", "make_fx_pre_dispatch", "export", "aot_autograd",
                    "export_core")
DYNAMIC = ("dynamo", "export", "aot_autograd", "export_core")


@dataclass(frozen=True)
class ProgramSpec:
    steps: tuple[str, ...]
    capture: str = "dynamo"
    dtype: str = "float32"
    dynamic: bool = False
    removed: tuple[str, ...] = ()  # kernels the device lacks: taken out of katas.common.npu.NPU_OPS

    def __post_init__(self) -> None:
        unknown = [s for s in self.steps if s not in STEP_TEXT]
        if unknown:
            raise ValueError(f"unknown steps {unknown}")


class Program(nn.Module):
    """The model a ProgramSpec describes. Step i owns the submodules `s{i}` (and `fc{i}` where it needs a
    Linear), so graphs read like the spec."""

    def __init__(self, steps: tuple[str, ...]) -> None:
        super().__init__()
        self.steps = tuple(steps)
        for i, step in enumerate(self.steps):
            if step in LINEAR_CLASSES:
                setattr(self, f"s{i}", LINEAR_CLASSES[step](WIDTH, WIDTH))
            elif step in ACTIVATION_CLASSES:
                setattr(self, f"s{i}", ACTIVATION_CLASSES[step]())
            elif step == "relu_module":
                setattr(self, f"s{i}", nn.ReLU())
            elif step == "relu_module_inplace_keyword":
                setattr(self, f"s{i}", nn.ReLU(inplace=True))
            elif step.startswith("kata_"):
                setattr(self, f"w{i}", nn.Parameter(torch.randn(WIDTH, WIDTH) * 0.3))
                setattr(self, f"b{i}", nn.Parameter(torch.randn(WIDTH) * 0.1))
            if step in ("add", "add_inplace_method", "add_inplace_operator", "index_tensor", "index_rows", "cond",
                        "cond_nested", "no_grad"):
                setattr(self, f"fc{i}", nn.Linear(WIDTH, WIDTH))

    def forward(self, x):  # noqa: C901 - one branch per step
        h = x
        for i, step in enumerate(self.steps):
            fc = getattr(self, f"fc{i}", None)
            if step in LINEAR_CLASSES or step in ACTIVATION_CLASSES or step == "relu_module":
                h = getattr(self, f"s{i}")(h)
            elif step == "relu_function":
                h = torch.relu(h)
            elif step == "relu_module_inplace_keyword":
                h = getattr(self, f"s{i}")(h.clone())
            elif step == "relu_function_inplace_keyword":
                h = F.relu(h.clone(), inplace=True)
            elif step == "int_index_math":
                h = h + ((h.argmax(-1, keepdim=True) + 1) * 2).to(h.dtype)
            elif step == "bool_mask_math":
                h = h + ((h > 0) * (h < 1) + (h > 1)).to(h.dtype)
            elif step == "zero_dim":
                h = h * (torch.relu(h.sum()) * 2 + 1)
            elif step == "relu_method":
                h = h.relu()
            elif step == "relu_inplace_method":
                h = h.clone()
                h.relu_()
            elif step == "relu_inplace_function":
                h = torch.relu_(h.clone())
            elif step == "add":
                h = h + fc(h)
            elif step == "add_inplace_method":
                h = h.clone()
                h.add_(fc(h))
            elif step == "add_inplace_operator":
                h = h.clone()
                h += fc(h)
            elif step == "aten_relu_packet":
                h = torch.ops.aten.relu(h)
            elif step == "aten_relu_overload":
                h = torch.ops.aten.relu.default(h)
            elif step == "aten_sigmoid_packet":
                h = torch.ops.aten.sigmoid(h)
            elif step == "aten_sin_packet":
                h = torch.ops.aten.sin(h)
            elif step == "aten_relu_inplace_packet":
                h = torch.ops.aten.relu_(h.clone())
            elif step == "kata_linear_gelu_packet":
                h = torch.ops.kata.linear_gelu(h, getattr(self, f"w{i}"), getattr(self, f"b{i}"))
            elif step == "kata_linear_gelu_overload":
                h = torch.ops.kata.linear_gelu.default(h, getattr(self, f"w{i}"), getattr(self, f"b{i}"))
            elif step == "mylib_gelu_packet":
                h = torch.ops.mylib.gelu(h)
            elif step == "mylib_gelu_overload":
                h = torch.ops.mylib.gelu.default(h)
            elif step == "prims_mul_overload":
                h = torch.ops.prims.mul.default(h, h)
            elif step == "index_tensor":
                h = fc(h)[0] + h
            elif step == "index_rows":
                h = fc(h)[:, 1:].sum(-1, keepdim=True) + h
            elif step == "unpack_max":
                h = h - h.max(-1, keepdim=True)[0]
            elif step == "size_symint":
                n = h.shape[0]
                h = h.reshape(n * 2, -1).reshape(n, -1)
            elif step == "size_symfloat":
                n = h.shape[0]
                h = h.reshape(int(n * 1.0), -1)
            elif step == "scale_by_size":
                h = torch.relu(h * 2) * h.shape[0]
            elif step == "cond":
                h = torch.cond(h.sum() > 0, lambda t: fc(t).relu(), lambda t: fc(t).sigmoid(), (h,))
            elif step == "cond_nested":
                def inner(t):
                    return torch.cond(t.sum() > 1, lambda u: fc(u).relu(), lambda u: fc(u).sigmoid(), (t,))
                h = torch.cond(h.sum() > 0, inner, lambda t: -t, (h,))
            elif step == "no_grad":
                with torch.no_grad():
                    h = fc(h)
            else:  # pragma: no cover - ProgramSpec validates its steps
                raise ValueError(step)
        return h


def build_program(spec: ProgramSpec) -> Program:
    from katas.common import ops  # noqa: F401 - registers kata::linear_gelu and mylib::gelu

    with torch.random.fork_rng():
        torch.manual_seed(len(spec.steps))
        model = Program(spec.steps).to(getattr(torch, spec.dtype))
    return model.eval()


def program_inputs(spec: ProgramSpec) -> tuple[torch.Tensor, ...]:
    return (torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(7), dtype=getattr(torch, spec.dtype)),)


def capture_program(spec: ProgramSpec) -> torch.fx.GraphModule:
    """The graph of `spec`'s model in its capture; symbolic_trace keeps every table subclass whole."""
    from katas.common import capture

    model = build_program(spec)
    if spec.capture == "symbolic_trace":
        graph = LeafSubclassTracer().trace(model)
        graph._tracer_cls = None  # the graph crosses to the worker, which cannot import this file's tracer
        return torch.fx.GraphModule(model, graph, "Program")
    return capture(model, program_inputs(spec), spec.capture, dynamic=spec.dynamic).gm


def describe_program(spec: ProgramSpec) -> str:
    """A counterexample as a person reads it."""
    capture = spec.capture + (" (dynamic=True: symbolic batch size)" if spec.dynamic else "")
    if spec.capture == "symbolic_trace":
        capture += " (a custom Tracer whose is_leaf_module keeps every nn.Linear / nn.ReLU subclass whole)"
    lines = [f"model on x of shape ({BATCH}, {WIDTH}) {spec.dtype}, captured with {capture}:"]
    lines += [f"  {STEP_TEXT[step]}" for step in spec.steps]
    if spec.removed:
        lines.append(f"on a device whose katas.common.npu.NPU_OPS lacks {', '.join(spec.removed)}")
    return "\n".join(lines)


# A step's twin: another step whose nodes share their names (and, where the capture keeps them, their targets) with
# the step's own in most captures, but not their op -- a call_module `s{i}` that is an nn.Linear in one program and
# a ScaledLinear in the other, Dynamo's `h` that is a linear in one and a clone in the other, a `mul` that multiplies
# tensors in one and sizes in the other. One NPUOperatorSupport asked about a program and then its twin (and back)
# must answer each node as a new one would: nothing carries over from one graph to the next.
TWIN_STEPS = {
    "linear": "linear_overrides", "linear_overrides": "linear",
    "linear_keeps": "linear_inherits_override", "linear_inherits_override": "linear_keeps",
    "linear_keeps_keeps": "linear_overrides", "linear_restores_forward": "linear_inherits_override",
    "relu_module": "relu_keeps_overrides", "relu_keeps": "relu_keeps_overrides", "relu_keeps_overrides": "relu_keeps",
    "relu_function": "relu_inplace_function", "relu_inplace_function": "relu_function",
    "relu_method": "relu_inplace_method", "relu_inplace_method": "relu_method",
    "add": "add_inplace_method", "add_inplace_method": "add", "add_inplace_operator": "add",
    "aten_relu_packet": "aten_relu_inplace_packet", "aten_relu_inplace_packet": "aten_relu_packet",
    "aten_sigmoid_packet": "aten_sin_packet", "aten_sin_packet": "aten_sigmoid_packet",
    "zero_dim": "size_symint", "size_symint": "scale_by_size", "size_symfloat": "zero_dim",
    "scale_by_size": "size_symint",
}


def allowed_steps(capture: str) -> tuple[str, ...]:
    """The steps a capture can take."""
    return tuple(s for s in STEPS if not (capture == "symbolic_trace" and s in NOT_SYMBOLIC_TRACE)
                 and not (capture.startswith("export") and s in NOT_EXPORT))


def twin_program(spec: ProgramSpec) -> ProgramSpec:
    """`spec` with every step that has a twin the capture can take replaced by it (same capture, dtype, sizes)."""
    allowed = allowed_steps(spec.capture)
    steps = tuple(TWIN_STEPS[s] if TWIN_STEPS.get(s) in allowed else s for s in spec.steps)
    return ProgramSpec(steps, spec.capture, spec.dtype, spec.dynamic)


def program_specs(*, max_steps: int = 4, captures=PROGRAM_CAPTURES, dtypes=DTYPES,
                  removable=()) -> st.SearchStrategy[ProgramSpec]:
    """Random programs every capture can take: 1..max_steps steps, a capture (symbolic sizes only where it can),
    a dtype, and (when `removable` is given) a device that lacks some of those kernels. Shrinks toward one nn.Linear,
    Dynamo, float32, static shapes, every kernel present."""

    def for_capture(capture: str) -> st.SearchStrategy[ProgramSpec]:
        steps = allowed_steps(capture)
        return st.builds(
            ProgramSpec,
            steps=st.lists(st.sampled_from(steps), min_size=1, max_size=max_steps).map(tuple),
            capture=st.just(capture),
            dtype=st.sampled_from(tuple(dtypes)),
            dynamic=st.booleans() if capture in DYNAMIC else st.just(False),
            removed=(st.lists(st.sampled_from(tuple(removable)), max_size=3, unique=True).map(lambda r: tuple(sorted(r)))
                     if removable else st.just(())),
        )

    return st.sampled_from(tuple(captures)).flatmap(for_capture)
