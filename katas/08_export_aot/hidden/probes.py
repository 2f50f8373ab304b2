"""Probes for kata 8's checks: everything that runs the attempt's code.

The models are recipes (a name, or an MLPSpec, and a seed) built the same way on both sides. A probe builds the
model here, in the worker, hands it to the attempt's functions, and returns plain data: op names, node
descriptions, outputs as tensors, error text. checks.py builds the same model in its own process, computes
eager's answers, decides which nodes the NPU runs from the node descriptions, reads the device's counters, and
judges. Nothing here knows what a right answer is.

Graphs that isolate one step (legalise, is_npu_node) are made here with torch's own tools from the spec the
lesson states — `torch.export.export` with a Dim on the batch, then torch's default decompositions minus the ops
in NPU_OPS — so a mistake in the attempt's export does not hide what its legalise does.
"""
from __future__ import annotations

import copy
import io
import operator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from katas.common.models import MLPSpec, build_mlp
from katas.common.npu import NPU_OPS, canonical_name
from katas.common.quiet import quiet

RUN_PROGRAM = "npu_aot.run_program.default"
# Export IR nodes that are neither core ATen nor compute: sizes read on the host, metadata asserts, tuple indexing.
EXPORT_IR_EXTRAS = ("aten.sym_size.int", "aten._assert_tensor_metadata.default", "getitem")


# --- the models -------------------------------------------------------------------------------------------

class FlattenViews(nn.Module):
    """(B, 2, 2) -> flatten -> Linear -> unsqueeze -> ReLU -> squeeze -> Linear: views whose sizes, exported,
    come from sym_size (flatten) or are unsqueeze/squeeze, which the NPU does not run."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1)).unsqueeze(1)).squeeze(1))


class Aliases(nn.Module):
    """Linear -> detach (an alias) -> [:, None] (a full slice and an unsqueeze) -> GELU -> [:, 0] -> Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        h = self.fc1(x).detach()[:, None]
        return self.fc2(F.gelu(h).squeeze(1).clone())


class Float64Head(nn.Module):
    """Linear -> GELU in float32, then a float64 Linear: the NPU has no float64."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3).double()

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)).double())


class ScaledByBuffer(nn.Module):
    """Linear -> times a buffer -> SiLU: a buffer, like a parameter, is an input of the exported program."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, 8))

    def forward(self, x):
        return F.silu(self.fc1(x) * self.scale)


class SlicesAndViews(nn.Module):
    """(B, 2, 2) -> view(-1, 4) (legal as exported) -> Linear -> two unsqueezes -> ReLU -> times the buffer
    unsqueezed (static sizes) -> flatten -> [:, :6] -> GELU -> [:, 1:] -> [:, ::2] -> plus the mean of
    table[:100]: views of every kind, full slices to remove, and slices that keep part of a tensor, which stay."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, 8))
        self.register_buffer("table", torch.linspace(0.0, 1.0, 128))

    def forward(self, x):
        h = self.fc1(x.view(-1, 4))
        h = (F.relu(h.unsqueeze(1).unsqueeze(2)) * self.scale.unsqueeze(0)).flatten(1)
        return F.gelu(h[:, :6])[:, 1:][:, ::2] + self.table[:100].mean()


class Gram(nn.Module):
    """Linear -> h @ h.T (batch x batch) -> unsqueeze(0) -> ReLU -> squeeze(0): a view with two symbolic sizes,
    which -1 cannot express, so it stays as it is."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)

    def forward(self, x):
        h = self.fc1(x)
        return F.relu((h @ h.T).unsqueeze(0)).squeeze(0)


class ThreeOutputs(nn.Module):
    """z = Linear(x); a = GELU(z); returns (Linear(a), z, a): one island of NPU ops with three outputs."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        z = self.fc1(x)
        a = F.gelu(z)
        return self.fc2(a), z, a


class TwoInputs(nn.Module):
    """x (B1, 4) and y (B2, 6), batches independent: GELU(Linear(x)) + Linear(y).mean(0)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(6, 8)

    def forward(self, x, y):
        return F.gelu(self.fc1(x)) + self.fc2(y).mean(0)


class BatchNotFirst(nn.Module):
    """Linear -> ReLU -> unsqueeze(0) -> Linear: the output is 1 x batch x 3, the batch at position 1."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)).unsqueeze(0))


class Attention(nn.Module):
    """(B, 5, 8) -> Linear -> reshape to heads -> transpose(1, 2) -> (q @ q^T) @ q -> transpose(1, 2) ->
    reshape(B, 5, 8) -> Linear: the last reshape reads a transposed (non-contiguous) tensor, so export writes a
    clone(memory_format=torch.contiguous_format) before its view, and that view is legal only after the clone."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x):
        b, n, c = x.shape
        q = self.fc1(x).reshape(b, n, 2, 4).transpose(1, 2)
        o = (q @ q.transpose(-2, -1)) @ q
        return self.fc2(o.transpose(1, 2).reshape(b, n, c))


class ViewDtypes(nn.Module):
    """Linear -> .view(torch.int32) & 0xFFFF, and ReLU -> .view(torch.float16) -> nan_to_num -> * 2: aten.view.dtype,
    named `view` like an NPU op, but making int32 (not an NPU dtype), or float16 through an overload the NPU has
    no kernel for."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)

    def forward(self, x):
        h = self.fc1(x)
        return h.view(torch.int32) & 0xFFFF, torch.nan_to_num(F.relu(h).view(torch.float16)) * 2


class Copies(nn.Module):
    """Linear -> .to(float32, copy=True) (a copy that changes nothing) -> GELU -> clone(preserve_format) (a plain
    clone) -> view(B, 2, 4).transpose(1, 2) -> .to(memory_format=contiguous_format, copy=True) -> view(B, 8) -> ReLU
    -> Linear: a plain clone to remove, a plain copy legalise may remove or keep, and a copy that sets the layout,
    which the view after it needs (on the transposed tensor it raises "view size is not compatible")."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x):
        b = x.shape[0]
        h = F.gelu(self.fc1(x).to(torch.float32, copy=True)).clone(memory_format=torch.preserve_format)
        t = h.view(b, 2, 4).transpose(1, 2).to(memory_format=torch.contiguous_format, copy=True)
        return self.fc2(F.relu(t.view(b, 8)))


class Layouts(nn.Module):
    """(B, 2, 3, 4) -> clone(memory_format=contiguous_format) of the contiguous input (a clone that changes nothing:
    legalise may remove it or keep it) -> Linear -> GELU = h; then h.transpose(2, 3).contiguous(memory_format=
    channels_last).view(B, 2, -1) -> ReLU (the lesson's example), plus h.view(B, 2, 3, 2, 2).permute(0, 1, 4, 3, 2)
    .contiguous(memory_format=channels_last_3d).view(B, 2, -1) -> Linear: each view is legal only on its clone's
    output (on the transposed or permuted tensor it raises "Cannot view a tensor ...")."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 4), nn.Linear(12, 3)

    def forward(self, x):
        b = x.shape[0]
        h = F.gelu(self.fc1(x.clone(memory_format=torch.contiguous_format)))
        c = F.relu(h.transpose(2, 3).contiguous(memory_format=torch.channels_last).view(b, 2, -1))
        d = h.view(b, 2, 3, 2, 2).permute(0, 1, 4, 3, 2).contiguous(memory_format=torch.channels_last_3d)
        return self.fc2(c + d.view(b, 2, -1))


class MixedDtypes(nn.Module):
    """Float32 activations that read tensors of other dtypes, which type promotion hides (each product is float32):
    Linear -> times a 0-dim float64 buffer (mul's second input) -> GELU -> a 0-dim int64 buffer times it (mul's
    first input) -> ReLU -> a float64 constant plus it (a lifted constant tensor, add's first input) -> times its
    mean cast to float64 inside the graph (a node, not a placeholder) -> plus arange(8) (an int64 index made
    inside) -> tanh -> Linear. Every op between the NPU ops reads a float64 or int64 tensor: it stays on the CPU."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3)
        self.register_buffer("scale", torch.tensor(1.5, dtype=torch.float64))
        self.register_buffer("step", torch.tensor(3))

    def forward(self, x):
        h = self.step * F.gelu(self.fc1(x) * self.scale)
        h = torch.tensor(0.5, dtype=torch.float64) + F.relu(h)
        h = h * h.mean().double()
        return self.fc2(torch.tanh(h + torch.arange(8)))


class BatchSlices(nn.Module):
    """Linear -> h; returns ReLU(h[:3]) (a numeric end on the batch equal to the example's batch, 3), GELU(h[:2])
    (below it), ReLU(h.unsqueeze(0)[:, :3]) (the batch at position 1, end equal to it) and ReLU(h[:, :6]) (a static
    dimension): every one keeps part of its input on a larger batch, so each stays. Such a slice makes export
    guard the batch at least 3 (a Dim named without min= is refused): exported with Dim("batch0", min=3) and run
    on batches of 3 rows or more."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)

    def forward(self, x):
        h = self.fc1(x)
        return F.relu(h[:3]), F.gelu(h[:2]), F.relu(h.unsqueeze(0)[:, :3]), F.relu(h[:, :6])


class InputViews(nn.Module):
    """Three inputs, batches independent (B, B + 2, B + 4): reshapes see each input's own batch symbol, bare or
    computed from it. x -> Linear -> GELU = a -> reshape(B, 2, 4).flatten(0, 1) (2*B x 4: the batch multiplied into
    a size) -> ReLU; y -> Linear -> unsqueeze(1) (the second input's batch, bare) -> ReLU; w -> Linear ->
    reshape(2*B3, 4) -> ReLU -> reshape(B3, 2, 4) (the third input's batch multiplied, then split out again)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(4, 8), nn.Linear(6, 8), nn.Linear(4, 8)

    def forward(self, x, y, w):
        a = F.gelu(self.fc1(x))
        b = self.fc2(y)
        c = self.fc3(w)
        return (F.relu(a.reshape(a.shape[0], 2, 4).flatten(0, 1)), F.relu(b.unsqueeze(1)),
                F.relu(c.reshape(c.shape[0] * 2, 4)).reshape(c.shape[0], 2, 4))


# kata 8's fuzz (blind round 5): how a view's sizes hold an input's batch B, on a branch Linear(xi) of each input
VIEW_KINDS = ("multiplied", "bare", "split", "none")
VIEW_TEXT = {"bare": "ReLU(t.unsqueeze(1)) (B x 1 x 8)",
             "multiplied": "ReLU(t.reshape(B, 2, 4).flatten(0, 1)) (2*B x 4)",
             "split": "ReLU(t.reshape(2*B, 4)).reshape(B, 2, 4)", "none": ""}


def view_branch(t: torch.Tensor, kind: str) -> torch.Tensor | None:
    """`t` (B x 8) through a reshape whose sizes hold B as VIEW_KINDS says, or None."""
    b = t.shape[0]
    if kind == "bare":
        return F.relu(t.unsqueeze(1))
    if kind == "multiplied":
        return F.relu(t.reshape(b, 2, 4).flatten(0, 1))
    if kind == "split":
        return F.relu(t.reshape(b * 2, 4)).reshape(b, 2, 4)
    return None


# kata 8's fuzz (blind round 5): a slice of h (batch x 8) beside the outputs. The end on the batch is below the
# example's batch (3): an end at or above it makes export guard the batch (lower's Dim("batchN") refuses it);
# BatchSlices has those, for legalise alone.
SLICES = ("batch_below", "static", "none")
SLICE_TEXT = {"batch_below": "ReLU(h[:2]) (the batch, end below the example's 3)",
              "static": "ReLU(h[:, 2:7]) (a static dimension)", "none": ""}


def slice_branch(h: torch.Tensor, kind: str) -> torch.Tensor | None:
    if kind == "batch_below":
        return F.relu(h[:2])
    if kind == "static":
        return F.relu(h[:, 2:7])
    return None


# kata 8's fuzz: a float32 op that reads a tensor of another dtype, its output float32 (type promotion), or none
MIXED_DTYPES = ("float64_buffer", "int64_buffer", "float64_constant", "float64_cast", "int64_index", "none")
MIXED_TEXT = {"float64_buffer": "a * scale (a 0-dim float64 buffer)", "int64_buffer": "step * a (step: a 0-dim int64 "
              "buffer)", "float64_constant": "torch.tensor(0.5, dtype=torch.float64) + a",
              "float64_cast": "a * a.mean().double()", "int64_index": "a + torch.arange(8) (int64)", "none": "a"}


def mix_dtypes(module: nn.Module, kind: str, h: torch.Tensor) -> torch.Tensor:
    """`h` (float32) combined with a tensor of another dtype as `kind` says (MIXED_DTYPES): float32 again."""
    if kind == "float64_buffer":
        return h * module.scale64
    if kind == "int64_buffer":
        return module.step64 * h
    if kind == "float64_constant":
        return torch.tensor(0.5, dtype=torch.float64) + h
    if kind == "float64_cast":
        return h * h.mean().double()
    if kind == "int64_index":
        return h + torch.arange(h.shape[-1])
    return h


class ProgramModel(nn.Module):
    """The model a plan of `katas.common.strategies.aot_program_plans()` describes (kata 8's fuzz):

    x0 (B0, 4) -> z = Linear -> a = activation(z); each further input xi (Bi, 4), batches independent, adds
    Linear(xi).mean(0); then, as the plan says: the batch moved away from position 0 (or not) by an unsqueeze that
    ReLU reads and a squeeze undoes; a cast (float64 for a float64 Linear, or float16) and back; a
    transpose-then-reshape (a clone for contiguity, then a view); the outputs z and a returned beside the result
    (an island with 1-3 outputs); a `.view(dtype)` output; and (h @ h.T).unsqueeze(0), two symbolic sizes."""

    def __init__(self, plan: dict) -> None:
        super().__init__()
        self.plan = plan
        self.fc0 = nn.Linear(4, 8)
        self.more = nn.ModuleList(nn.Linear(4, 8) for _ in range(plan["inputs"] - 1))
        if plan["activation"] == "layer_norm":
            self.norm = nn.LayerNorm(8)
        if plan["cast"] == "float64":
            self.head64 = nn.Linear(8, 8).double()
        self.fc_out = nn.Linear(8, 3)
        if plan.get("mixed") == "float64_buffer":
            self.register_buffer("scale64", torch.tensor(1.5, dtype=torch.float64))
        elif plan.get("mixed") == "int64_buffer":
            self.register_buffer("step64", torch.tensor(3))

    def _activate(self, z):
        act = self.plan["activation"]
        if act == "layer_norm":
            return self.norm(z)
        return {"gelu": F.gelu, "relu": F.relu, "silu": F.silu, "sin": torch.sin}[act](z)

    def forward(self, x0, x1=None, x2=None):
        plan = self.plan
        xs = [x for x in (x0, x1, x2) if x is not None]
        z = self.fc0(x0)
        a = self._activate(z)
        h = mix_dtypes(self, plan.get("mixed", "none"), a)
        for fc, x in zip(self.more, xs[1:]):
            h = h + fc(x).mean(0)
        if plan["batch_at"] == 1:
            h = F.relu(h.unsqueeze(0)).squeeze(0)  # 1 x batch x 8: the batch at position 1
        else:
            h = F.relu(h.unsqueeze(1)).squeeze(1)  # batch x 1 x 8
        if plan["cast"] == "float64":
            h = self.head64(h.double()).float()
        elif plan["cast"] == "float16":
            h = (h.half() * 3).float()
        if plan["layout"] == "transpose_reshape":
            h = (h.reshape(h.shape[0], 2, 4).transpose(1, 2) * 2).reshape(h.shape[0], 8)
        outs = [self.fc_out(h), z, a][:plan["outputs"]]
        views = plan.get("views", ())
        for i, (kind, t) in enumerate(zip(views, [z] + [fc(x) for fc, x in zip(self.more, xs[1:])])):
            branch = view_branch(t, kind)
            if branch is not None:
                outs.append(branch)
        sliced = slice_branch(h, plan.get("slice", "none"))
        if sliced is not None:
            outs.append(sliced)
        if plan["view_dtype"] == "int32":
            outs.append(h.view(torch.int32) & 0xFFFF)
        elif plan["view_dtype"] == "float16":
            outs.append(torch.nan_to_num(h.view(torch.float16)) * 2)
        if plan["symbolic"] == 2:
            outs.append(F.relu((h @ h.T).unsqueeze(0)))
        return tuple(outs) if len(outs) > 1 else outs[0]


def program_inputs(plan: dict, batch: int, seed: int = 1) -> tuple[torch.Tensor, ...]:
    """A plan's inputs: input i has batch `batch + 2 * i` (independent batches) and 4 features."""
    generator = torch.Generator().manual_seed(seed * 1000 + batch)
    return tuple(torch.randn(batch + 2 * i, 4, generator=generator) for i in range(plan["inputs"]))


VIEW_DTYPE_TEXT = {"none": "", "int32": ", h.view(torch.int32) & 0xFFFF",
                   "float16": ", nan_to_num(h.view(torch.float16)) * 2"}


def describe_plan(plan: dict) -> str:
    """A fuzz example as a person reads it."""
    where = {0: "batch x 1 x 8 (batch at position 0)", 1: "1 x batch x 8 (batch at position 1)"}[plan["batch_at"]]
    lines = [f"inputs: {plan['inputs']} of 4 features, independent batches (input i has batch b + 2i)",
             f"  z = Linear(x0); a = {plan['activation']}(z); plus Linear(xi).mean(0) for each further input",
             f"  h = {MIXED_TEXT[plan.get('mixed', 'none')]}",
             f"  unsqueeze to {where} -> ReLU -> squeeze",
             f"  cast: {plan['cast']}; layout: {plan['layout']}",
             *[f"  view of input {i}'s batch B (t = Linear(x{i})): {VIEW_TEXT[kind]}"
               for i, kind in enumerate(plan.get("views", ())) if kind != "none"],
             *([f"  slice: {SLICE_TEXT[plan['slice']]}"] if plan.get("slice", "none") != "none" else []),
             f"  outputs: Linear(h){', z' if plan['outputs'] > 1 else ''}{', a' if plan['outputs'] > 2 else ''}"
             f"{VIEW_DTYPE_TEXT[plan['view_dtype']]}"
             f"{', relu((h @ h.T).unsqueeze(0)) (two symbolic sizes)' if plan['symbolic'] == 2 else ''}"]
    return "\n".join(lines)


@dataclass(frozen=True)
class Recipe:
    """A model of the zoo: how to build it, its input's shape after the batch, and what it must become."""

    build: Callable[[], nn.Module]
    features: tuple[int, ...]
    programs: int  # NPU programs (delegates) in the lowered graph
    launches: int  # NPU launches per call: compute ops on the NPU, layout ops cost none
    text: str
    legalised: int = 0  # aliases, clones, full slices and reshapes legalise removes or rewrites
    more_inputs: tuple[tuple[int, ...], ...] = ()  # the features of the inputs after the first, if any
    min_batch: int | None = None  # the Dim's min= in the spec's export (a slice on the batch guards it), if any
    batches: tuple[int, ...] | None = None  # the batch sizes its programs run on, if not the checks' BATCHES


ZOO: dict[str, Recipe] = {
    "mlp": Recipe(lambda: nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 3)), (4,), 1, 3,
                  "Linear -> GELU -> Linear"),
    "silu_mlp": Recipe(lambda: nn.Sequential(nn.Linear(4, 8), nn.SiLU(), nn.Linear(8, 3)), (4,), 1, 3,
                       "Linear -> SiLU -> Linear"),
    "layer_norm_between": Recipe(
        lambda: nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3)), (4,), 2, 3,
        "Linear -> GELU -> LayerNorm (CPU) -> Linear"),
    "flatten_views": Recipe(FlattenViews, (2, 2), 1, 3,
                            "(B, 2, 2) -> flatten -> Linear -> unsqueeze -> ReLU -> squeeze -> Linear", 3),
    "aliases": Recipe(Aliases, (4,), 1, 3, "Linear -> detach -> [:, None] -> GELU -> squeeze -> clone -> Linear",
                      5),
    "slices_and_views": Recipe(SlicesAndViews, (2, 2), 3, 5,
                               "(B, 2, 2) -> view(-1, 4) -> Linear -> unsqueeze x2 -> ReLU -> times a buffer "
                               "unsqueezed -> flatten -> [:, :6] -> GELU -> [:, 1:] -> [:, ::2] -> + table[:100].mean()",
                               7),
    "gram": Recipe(Gram, (4,), 2, 3, "Linear -> h @ h.T -> unsqueeze(0) -> ReLU -> squeeze(0)", 0),
    "float64_head": Recipe(Float64Head, (4,), 1, 2, "Linear -> GELU (float32) -> .double() -> Linear (float64)"),
    "scaled_by_buffer": Recipe(ScaledByBuffer, (4,), 1, 3, "Linear -> times a buffer -> SiLU"),
    "three_outputs": Recipe(ThreeOutputs, (4,), 1, 3, "z = Linear(x); a = GELU(z); returns (Linear(a), z, a)"),
    "two_inputs": Recipe(TwoInputs, (4,), 2, 4, "GELU(Linear(x)) + Linear(y).mean(0), x (B1, 4), y (B2, 6), "
                         "batches independent", more_inputs=((6,),)),
    "batch_not_first": Recipe(BatchNotFirst, (4,), 1, 3, "Linear -> ReLU -> unsqueeze(0) -> Linear "
                              "(1 x batch x 3: the batch at position 1)", 1),
    "attention": Recipe(Attention, (5, 8), 2, 4, "(B, 5, 8) -> Linear -> reshape(B, 5, 2, 4).transpose(1, 2) -> "
                        "(q @ q^T) @ q -> transpose(1, 2).reshape(B, 5, 8) -> Linear", 2),
    # 3 programs with the plain copy kept, 2 with it removed (the lesson allows both): a legalise case only
    "copies": Recipe(Copies, (8,), 3, 4, "Linear -> .to(torch.float32, copy=True) -> GELU -> "
                     ".clone(memory_format=torch.preserve_format) -> view(B, 2, 4).transpose(1, 2) -> "
                     ".to(memory_format=torch.contiguous_format, copy=True) -> view(B, 8) -> ReLU -> Linear", 3),
    # 2 programs whether the contiguous clone of the input (a clone that changes nothing) is kept or removed
    "layouts": Recipe(Layouts, (2, 3, 4), 2, 5, "(B, 2, 3, 4) -> .clone(memory_format=torch.contiguous_format) -> "
                      "Linear -> GELU = h; ReLU(h.transpose(2, 3).contiguous(memory_format=torch.channels_last)"
                      ".view(B, 2, -1)) + h.view(B, 2, 3, 2, 2).permute(0, 1, 4, 3, 2).contiguous(memory_format="
                      "torch.channels_last_3d).view(B, 2, -1) -> Linear", 3),
    "mixed_dtypes": Recipe(MixedDtypes, (4,), 4, 5, "Linear -> * (0-dim float64 buffer) -> GELU -> (0-dim int64 "
                           "buffer) * -> ReLU -> tensor(0.5, float64) + -> * mean().double() -> + arange(8) (int64) "
                           "-> tanh -> Linear: float32 ops reading float64 and int64 tensors"),
    "view_dtypes": Recipe(ViewDtypes, (4,), 2, 3, "Linear -> (.view(torch.int32) & 0xFFFF, "
                          "nan_to_num(ReLU.view(torch.float16)) * 2)", 2),
    # blind round 5: numeric slice ends on the batch (equal to the example's, below it, at position 1) and static
    "batch_slices": Recipe(BatchSlices, (4,), 1, 5, "Linear -> h; (ReLU(h[:3]), GELU(h[:2]), "
                           "ReLU(h.unsqueeze(0)[:, :3]), ReLU(h[:, :6])), exported with Dim('batch0', min=3)", 2,
                           min_batch=3, batches=(3, 4, 7)),
    # blind round 5: each input's own batch in a reshape: multiplied into a size (x), bare (y), multiplied and split (w)
    "input_views": Recipe(InputViews, (4,), 1, 7, "(ReLU(GELU(Linear(x)).reshape(B1, 2, 4).flatten(0, 1)), "
                          "ReLU(Linear(y).unsqueeze(1)), ReLU(Linear(w).reshape(2*B3, 4)).reshape(B3, 2, 4)), "
                          "x (B1, 4), y (B2, 6), w (B3, 4), batches independent", 5, more_inputs=((6,), (4,))),
}
EXAMPLE_BATCH = 3


def build(recipe: str | MLPSpec, seed: int = 0) -> nn.Module:
    """The model of `recipe`, weights drawn from `seed`, in eval mode."""
    torch.manual_seed(seed)
    if isinstance(recipe, dict):
        return ProgramModel(recipe).eval()
    model = build_mlp(recipe) if isinstance(recipe, MLPSpec) else ZOO[recipe].build()
    return model.eval()


def features(recipe: str | MLPSpec) -> tuple[int, ...]:
    return (recipe.in_features,) if isinstance(recipe, MLPSpec) else ZOO[recipe].features


def dtype_of(recipe: str | MLPSpec) -> torch.dtype:
    return recipe.torch_dtype if isinstance(recipe, MLPSpec) else torch.float32


def example(recipe: str | MLPSpec, batch: int = EXAMPLE_BATCH, seed: int = 1) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed * 1000 + batch)
    return torch.randn(batch, *features(recipe), generator=generator, dtype=dtype_of(recipe))


def inputs(recipe, batch: int = EXAMPLE_BATCH, seed: int = 1) -> tuple[torch.Tensor, ...]:
    """The model's inputs for `batch`: input i has batch `batch + 2 * i` (batches independent), its own values."""
    if isinstance(recipe, dict):
        return program_inputs(recipe, batch, seed)
    first = example(recipe, batch, seed)
    more = ZOO[recipe].more_inputs if isinstance(recipe, str) else ()
    rest = []
    for i, shape in enumerate(more, start=1):
        generator = torch.Generator().manual_seed(seed * 1000 + batch + 100 * i)
        rest.append(torch.randn(batch + 2 * i, *shape, generator=generator, dtype=dtype_of(recipe)))
    return (first, *rest)


def new_state(recipe: str | MLPSpec, seed: int = 99) -> dict[str, torch.Tensor]:
    """Other weights (and buffers) for the same model: what a weight update ships to a deployed program."""
    return build(recipe, seed).state_dict()


def eager(recipe: str | MLPSpec, batches: list[int], state_seed: int | None = None) -> dict[int, torch.Tensor]:
    """The model's own outputs for each batch size (run in the checks' process)."""
    model = build(recipe)
    if state_seed is not None:
        model.load_state_dict(new_state(recipe, state_seed))
    with torch.no_grad():
        return {b: model(*inputs(recipe, b)) for b in batches}


# --- describing graphs ------------------------------------------------------------------------------------

def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return "tensor:" + str(value.dtype).removeprefix("torch.")
    if isinstance(value, torch.SymInt):
        return "SymInt"
    if isinstance(value, (list, tuple)):
        return "list"
    return type(value).__name__


def describe_node(node: torch.fx.Node) -> dict:
    """What decides where a node may run, as plain data: its op, target, canonical name, and the kinds of the
    values it reads and makes (from the FakeTensors export leaves in node.meta["val"])."""
    target = node.target
    text = str(target) if isinstance(target, (torch._ops.OpOverload, str)) else getattr(target, "__name__", str(target))
    outputs = node.meta.get("val")
    outs = [_kind(v) for v in (outputs if isinstance(outputs, (list, tuple)) else [outputs]) if v is not None]
    return {"name": node.name, "op": node.op, "target": text,
            "canonical": canonical_name(target) if node.op == "call_function" else None,
            "core": isinstance(target, torch._ops.OpOverload) and torch.Tag.core in target.tags,
            "full_slice": target is torch.ops.aten.slice.Tensor and _is_full_slice(node),
            "unread_size": _unread_size(node),
            # SymInt arithmetic on sizes (operator.mul after flatten(0, 1)): Export IR, not an op of the attempt's
            "size_math": (not isinstance(target, torch._ops.OpOverload) and node.op == "call_function"
                          and isinstance(outputs, (torch.SymInt, torch.SymFloat, torch.SymBool))),
            "slice": _slice_text(node) if target is torch.ops.aten.slice.Tensor else None,
            "memory_format": str(node.kwargs["memory_format"]) if node.kwargs.get("memory_format") else None,
            "sets_layout": _sets_layout(node),
            "plain_copy": _is_plain_copy(node),
            "users": len(node.users),
            "inputs": [_kind(source.meta.get("val")) for source in node.all_input_nodes],
            "input_names": [source.name for source in node.all_input_nodes], "outputs": outs}


def _sets_layout(node: torch.fx.Node) -> bool:
    """A clone or _to_copy that names a memory format other than preserve_format (contiguous_format,
    channels_last): it sets the strides of its output, which a view after it may need."""
    return (node.target in (torch.ops.aten.clone.default, torch.ops.aten._to_copy.default)
            and node.kwargs.get("memory_format") not in (None, torch.preserve_format))


def _is_plain_copy(node: torch.fx.Node) -> bool:
    """A copy that changes nothing, which legalise may remove or keep: an aten._to_copy with the dtype, layout and
    device of its input and no memory format; or a clone or _to_copy naming a memory format its input already has
    (its output's strides are its input's: `x.clone(memory_format=torch.contiguous_format)` of a contiguous x)."""
    if node.target not in (torch.ops.aten._to_copy.default, torch.ops.aten.clone.default) or not node.args:
        return False
    if node.target is torch.ops.aten.clone.default and not _sets_layout(node):
        return False  # a plain clone: legalise must remove it
    source = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
    value = node.meta.get("val")
    if not (isinstance(source, torch.Tensor) and isinstance(value, torch.Tensor)
            and (source.dtype, source.layout, source.device) == (value.dtype, value.layout, value.device)):
        return False
    # compared as text: symbolic strides (12*s77) compared as SymInts would add guards
    return not _sets_layout(node) or str(tuple(source.stride())) == str(tuple(value.stride()))


def _is_size_math(node: torch.fx.Node) -> bool:
    """A sym_size, or SymInt arithmetic on sizes (operator.mul after flatten(0, 1))."""
    return node.op == "call_function" and (
        node.target is torch.ops.aten.sym_size.int
        or (not isinstance(node.target, torch._ops.OpOverload)
            and isinstance(node.meta.get("val"), (torch.SymInt, torch.SymFloat, torch.SymBool))))


def _unread_size(node: torch.fx.Node) -> bool:
    """A size computed on the host that nothing reads: no users, or only size arithmetic nothing reads (a
    sym_size read by nothing but a dead `mul` is as unread as one with no users)."""
    return _is_size_math(node) and all(_unread_size(user) for user in node.users)


def _slice_text(node: torch.fx.Node) -> str:
    """A slice as a person reads it: which dimension (the batch, a symbolic size, or a static one), start, end."""
    args = list(node.args) + [0, None, None, 1][len(node.args) - 1:]
    _, dim, start, end, step = args[:5]
    source = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
    size = source.shape[dim] if isinstance(source, torch.Tensor) and -source.dim() <= dim < source.dim() else None
    where = "a symbolic dimension (a batch)" if isinstance(size, torch.SymInt) else "a static dimension"
    end = "the end" if end is None or end >= 2 ** 62 else end
    return f"dimension {dim}, {where}, from {start} to {end}, step {step}"


def _is_full_slice(node: torch.fx.Node) -> bool:
    """aten.slice.Tensor(x, dim, start, end, step) that keeps every element of x along dim."""
    _, _dim, start, end, step = (list(node.args) + [0, None, None, 1][len(node.args) - 1:])[:5]
    return start in (0, None) and (end is None or end >= 2 ** 62) and step == 1


def _ops(gm: torch.fx.GraphModule) -> list[dict]:
    return [describe_node(n) for n in gm.graph.nodes if n.op == "call_function"]


# --- the spec's own graphs ---------------------------------------------------------------------------------

def spec_table() -> Any:
    """The decomposition table the lesson specifies: torch's default, minus the ops whose name is in NPU_OPS."""
    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        if canonical_name(op) in NPU_OPS:
            del table[op]
    return table


_SPEC_EXPORTS: dict[str, torch.export.ExportedProgram] = {}


def spec_export(recipe: str) -> torch.export.ExportedProgram:
    """The recipe exported with a dynamic batch and decomposed with spec_table(): the graph legalise receives.
    A copy of its own each call (a deep copy takes a millisecond; exporting again, a few hundred)."""
    if recipe not in _SPEC_EXPORTS:
        with quiet():
            args = inputs(recipe)
            low = ZOO[recipe].min_batch
            dims = tuple({0: torch.export.Dim(f"batch{i}", **({"min": low} if low else {}))}
                         for i in range(len(args)))
            ep = torch.export.export(build(recipe), args, dynamic_shapes=dims)
            _SPEC_EXPORTS[recipe] = ep.run_decompositions(spec_table())
    return copy.deepcopy(_SPEC_EXPORTS[recipe])


def _run(ep: torch.export.ExportedProgram, recipe: str | MLPSpec, batches: list[int],
         state: dict | None = None) -> dict[int, Any]:
    """ep.module()'s output per batch size, or the error's text."""
    results: dict[int, Any] = {}
    for b in batches:
        try:
            module = ep.module()
            if state is not None:
                module.load_state_dict(state, strict=False)
            with torch.no_grad():
                results[b] = module(*inputs(recipe, b))
        except Exception as exc:  # noqa: BLE001 - the check reports it
            results[b] = f"{type(exc).__name__}: {str(exc).strip()[:500]}"
    return results


def _batch_sizes(ep: torch.export.ExportedProgram) -> list:
    """Each user input's dimension 0 as export recorded it: a SymInt or the int it was fixed to."""
    user = set(ep.graph_signature.user_inputs)
    return [node.meta["val"].shape[0] for node in ep.graph.nodes if node.op == "placeholder" and node.name in user]


def _size_of_batch(ep: torch.export.ExportedProgram) -> list[str]:
    """Each user input's dimension 0 as text: a symbol ("s77") or the int it was fixed to."""
    return [str(size) for size in _batch_sizes(ep)]


def _batch_ranges(ep: torch.export.ExportedProgram) -> list[list[str] | None]:
    """Each user input's dimension 0 as the program bounds it at run time: [lower, upper] of its symbol in
    ep.range_constraints ("int_oo": unbounded), or None for a fixed size."""
    ranges = {str(symbol): bounds for symbol, bounds in ep.range_constraints.items()}
    found = [ranges.get(str(size)) for size in _batch_sizes(ep)]
    return [[str(r.lower), str(r.upper)] if r is not None else None for r in found]


# --- probes ------------------------------------------------------------------------------------------------

def exported(attempt: ModuleType, recipe: str | MLPSpec, batches: list[int]) -> dict:
    """export_for_npu(model, (example,)): what it returned, its batch size, its ops, its outputs per batch."""
    try:
        with quiet():
            ep = attempt.export_for_npu(build(recipe), inputs(recipe))
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - the check explains it
        return {"type": "raised", "error": f"{type(exc).__name__}: {str(exc).strip()[:500]}"}
    if not isinstance(ep, torch.export.ExportedProgram):
        return {"type": type(ep).__name__}
    return {"type": "ExportedProgram", "batch": _size_of_batch(ep), "ranges": _batch_ranges(ep),
            "ops": _ops(ep.graph_module), "outputs": _run(ep, recipe, batches)}


def table(attempt: ModuleType) -> dict:
    """npu_decomposition_table(): its type, and the ops it decomposes (as text)."""
    got = attempt.npu_decomposition_table()
    try:
        ops = sorted(str(op) for op in got.keys())
    except AttributeError:
        return {"type": type(got).__name__, "ops": None}
    return {"type": type(got).__name__, "ops": ops}


def default_table_ops() -> list[str]:
    return sorted(str(op) for op in torch.export.default_decompositions().keys())


def legalised(attempt: ModuleType, recipe: str, batches: list[int], times: int = 1) -> dict:
    """legalise() on the spec's graph of `recipe`, `times` times over: what the last call returned, the ops
    before it and after it, the outputs."""
    ep = spec_export(recipe)
    for _ in range(times):
        before = _ops(ep.graph_module)
        with quiet():
            returned = attempt.legalise(ep.graph_module)
    # gm(...) runs gm.code, which only gm.recompile() regenerates from the graph (ep.module() builds its own)
    stale = ep.graph_module.code != ep.graph_module.graph.python_code(root_module="self").src
    return {"returned": returned if isinstance(returned, int) else repr(returned)[:80], "before": before,
            "after": _ops(ep.graph_module), "outputs": _run(ep, recipe, batches), "stale_code": stale}


def support_verdicts(attempt: ModuleType, recipe: str, legalise_first: bool) -> list[dict]:
    """is_npu_node(node) for every node of the spec's graph of `recipe` (legalised by the attempt if asked)."""
    ep = spec_export(recipe)
    if legalise_first:
        attempt.legalise(ep.graph_module)
    verdicts = []
    for node in ep.graph.nodes:
        verdict = attempt.is_npu_node(node)
        verdicts.append({**describe_node(node), "verdict": verdict if isinstance(verdict, bool) else repr(verdict)})
    return verdicts


def _propagate(gm: torch.fx.GraphModule, fake_inputs: list) -> None:
    """Give a program's nodes the meta["val"] export would have: its graph run on the delegate's fake inputs."""
    from torch._guards import detect_fake_mode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    mode = detect_fake_mode(fake_inputs)
    if mode is not None:
        FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*fake_inputs)


def _delegates(gm: torch.fx.GraphModule) -> tuple[list[dict], list[dict]]:
    """(the programs the graph runs on the NPU, each as its ops or an error; the nodes outside them)."""
    from katas.common.npu.aot import unpack

    programs, outside = [], []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if str(node.target) != RUN_PROGRAM:
            outside.append(describe_node(node))
            continue
        try:
            inner = unpack(node.args[0])
        except Exception as exc:  # noqa: BLE001 - a program the runtime cannot read: not made by pack
            programs.append({"error": f"{type(exc).__name__}: {str(exc)[:300]}", "unreadable": True})
            continue
        try:
            _propagate(inner, [source.meta.get("val") for source in node.args[1]])
            programs.append({"ops": _ops(inner), "inputs": len(node.args[1])})
        except Exception as exc:  # noqa: BLE001 - read, but its graph does not run on its inputs' fake values
            programs.append({"error": f"{type(exc).__name__}: {str(exc)[:300]}"})
    return programs, outside


def _signature(ep: torch.export.ExportedProgram) -> dict:
    """Parameters and buffers the signature names, and those whose placeholder nothing reads."""
    sig = ep.graph_signature
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    unread = [target for name, target in {**sig.inputs_to_parameters, **sig.inputs_to_buffers}.items()
              if name in placeholders and not placeholders[name].users]
    return {"parameters": sorted(sig.parameters), "buffers": sorted(sig.buffers), "unread": sorted(unread),
            "get_attr": sorted(str(n.target) for n in ep.graph.nodes if n.op == "get_attr")}


def _verdicts(attempt: ModuleType, gm: torch.fx.GraphModule) -> dict[str, Any]:
    """The attempt's is_npu_node on each node of its lowered graph, to tell a node it refused from a node the
    partitioner dropped."""
    verdicts = {}
    for node in gm.graph.nodes:
        try:
            verdicts[node.name] = attempt.is_npu_node(node)
        except Exception as exc:  # noqa: BLE001 - only an explanation hangs on it
            verdicts[node.name] = f"raised {type(exc).__name__}"
    return verdicts


def _nested_getitems(gm: torch.fx.GraphModule) -> list[str]:
    """getitem(getitem(run_program, 0), i): an output of a several-output partition read as rows of its first."""
    def is_run_item(node) -> bool:
        return (isinstance(node, torch.fx.Node) and node.target is operator.getitem
                and isinstance(node.args[0], torch.fx.Node) and str(node.args[0].target) == RUN_PROGRAM)

    return [f"{n.name} = getitem({n.args[0].name}, {n.args[1]!r}) where {n.args[0].name} = "
            f"getitem({n.args[0].args[0].name}, {n.args[0].args[1]!r})"
            for n in gm.graph.nodes if n.target is operator.getitem and is_run_item(n.args[0])]


SAVE_IN_MEMORY = ":memory:"


def lowered(attempt: ModuleType, recipe: str | MLPSpec, batches: list[int], state_seed: int | None = None,
            save_to: str | None = None) -> dict:
    """lower(model, (example,)): the programs and the CPU nodes of its graph, its signature, its outputs per batch
    (with other weights loaded too, if `state_seed`), and whether torch.export.save takes it (to `save_to`, a path,
    or SAVE_IN_MEMORY: a buffer; export checks the signature against the graph only when it saves)."""
    try:
        with quiet():
            ep = attempt.lower(build(recipe), inputs(recipe))
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - the check explains it
        return {"type": "raised", "error": f"{type(exc).__name__}: {str(exc).strip()[:500]}"}
    if not isinstance(ep, torch.export.ExportedProgram):
        return {"type": type(ep).__name__}
    programs, outside = _delegates(ep.graph_module)
    verdicts = _verdicts(attempt, ep.graph_module)
    for node in outside:
        node["verdict"] = verdicts.get(node["name"])
    called = {str(n.target) for n in ep.graph.nodes if n.op in ("call_module", "get_attr")}
    leftover = sorted(name for name, _ in ep.graph_module.named_children() if name not in called)
    seen = {"type": "ExportedProgram", "programs": programs, "outside": outside, "signature": _signature(ep),
            "leftover_submodules": leftover, "nested_getitems": _nested_getitems(ep.graph_module),
            "outputs": _run(ep, recipe, batches)}
    if state_seed is not None:
        seen["outputs_new_state"] = _run(ep, recipe, batches, new_state(recipe, state_seed))
    if save_to is not None:
        try:
            with quiet():
                torch.export.save(ep, io.BytesIO() if save_to == SAVE_IN_MEMORY else save_to)
            seen["saved"] = None
        except Exception as exc:  # noqa: BLE001 - the check explains it
            seen["saved"] = f"{type(exc).__name__}: {str(exc).strip()[:600]}"
    return seen
