"""Probes for kata 7's checks: everything that runs the attempt's code.

The attempt's ops exist only in the process that imported the attempt (the worker), so everything that calls them
runs here: opcheck, the fake kernel under FakeTensorMode and export, gradients, the out= variant, the rewrite of a
Dynamo graph, and a training step through the attempt's backend. A probe takes plain data (an op case, a model
recipe) and returns plain data: tensors, shapes, op names and counts, exception text. checks.py computes every
eager answer in its own process from the same recipes and compares; nothing here knows what a right answer is.

An exception the attempt raises that no probe expects (NotImplementedError from the stub, a bug) propagates, so
the checker reports it at the attempt's own file and line.
"""
from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from katas.common.models import MLPSpec, build_mlp, example_input
from katas.common.quiet import quiet

OPS = ("linear_gelu", "linear_gelu_backward", "linear_gelu_out")  # the attempt's module attributes


class NotACustomOp(Exception):
    """The attribute exists but is not what torch.library.custom_op returns."""


def custom_op(attempt: ModuleType, name: str):
    """The attempt's op `name`, as the CustomOpDef `torch.library.custom_op` returned.

    A plain function is called once on sample inputs first, so the stub's NotImplementedError reads as
    unfinished work; a plain function that runs is reported as not being a custom op."""
    from torch._library.custom_ops import CustomOpDef

    value = getattr(attempt, name, None)
    if isinstance(value, CustomOpDef):
        return value
    if callable(value):
        case = OpCase()
        x, weight, bias = case.tensors()
        args = {"linear_gelu_backward": (torch.ones(2, 3), x, weight, bias),
                "linear_gelu_out": (x, weight, bias, torch.empty(2, 3))}.get(name, (x, weight, bias))
        value(*args)
    kind = "missing" if value is None else type(value).__name__
    raise NotACustomOp(f"{name} is {kind}, not a custom op: decorate it with @torch.library.custom_op(...)")


def op_name(attempt: ModuleType, name: str) -> str:
    """`npu::linear_gelu` -> "npu.linear_gelu.default": how graphs and the dispatcher name the op."""
    return str(custom_op(attempt, name)._opoverload)


# --- op cases: the same tensors on both sides -------------------------------------------------------------

@dataclass(frozen=True)
class OpCase:
    """One call of linear_gelu: x of shape (*lead, in_features), a weight (out_features, in_features)."""

    lead: tuple[int, ...] = (2,)
    in_features: int = 4
    out_features: int = 3
    bias: bool = True
    approximate: str = "none"
    dtype: str = "float32"
    seed: int = 0
    x_requires_grad: bool = True
    x_layout: str = "contiguous"  # or "transposed": katas.common.strategies.LINEAR_GELU_X_LAYOUTS

    def tensors(self, requires_grad: bool = False) -> tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
        generator = torch.Generator().manual_seed(self.seed)
        dtype = getattr(torch, self.dtype)
        if self.x_layout == "transposed" and self.lead:  # the same shape, its first two dimensions' strides swapped
            shape = (*self.lead, self.in_features)
            x = torch.randn(shape[1], shape[0], *shape[2:], generator=generator, dtype=dtype).transpose(0, 1)
        elif self.x_layout == "transposed":  # a vector has no two dimensions to swap: every second element instead
            x = torch.randn(2 * self.in_features, generator=generator, dtype=dtype)[::2]
        else:
            x = torch.randn(*self.lead, self.in_features, generator=generator, dtype=dtype)
        weight = torch.randn(self.out_features, self.in_features, generator=generator, dtype=dtype)
        bias = torch.randn(self.out_features, generator=generator, dtype=dtype) if self.bias else None
        if requires_grad:
            x.requires_grad_(self.x_requires_grad)
            weight.requires_grad_()
            if bias is not None:
                bias.requires_grad_()
        return x, weight, bias

    def describe(self) -> str:
        shape = (*self.lead, self.in_features)
        bias = "a bias" if self.bias else "no bias (None)"
        grad = "" if self.x_requires_grad else ", x without requires_grad"
        if self.x_layout == "transposed":
            made = (f"torch.randn{(shape[1], shape[0], *shape[2:])}.transpose(0, 1)" if self.lead else
                    f"torch.randn({2 * self.in_features})[::2]")
            grad += f", x laid out as {made} (strides {self.tensors()[0].stride()})"
        return (f"x {shape} {self.dtype}, weight ({self.out_features}, {self.in_features}), {bias}, "
                f"approximate={self.approximate!r}{grad}")


def _as_case(case: Any) -> OpCase:
    return case if isinstance(case, OpCase) else OpCase(**case)


def schema(attempt: ModuleType, name: str) -> dict:
    """The op's schema as data: each argument's type, default and whether it is declared written."""
    op = custom_op(attempt, name)
    parsed = op._opoverload._schema
    return {
        "text": str(parsed),
        "arguments": [{"name": a.name, "type": str(a.type), "default": a.default_value if a.has_default_value() else
                       "<none>", "written": bool(a.alias_info and a.alias_info.is_write)} for a in parsed.arguments],
        "returns": [str(r.type) for r in parsed.returns],
    }


def run_opcheck(attempt: ModuleType, name: str, cases: list[dict]) -> list[dict]:
    """torch.library.opcheck of the op on each case: {test name: "SUCCESS" or the failure's text} per case."""
    op = custom_op(attempt, name)
    results = []
    for raw in cases:
        case = _as_case(raw)
        x, weight, bias = case.tensors(requires_grad=True)
        if name == "linear_gelu":
            args = (x, weight, bias, case.approximate)
        elif name == "linear_gelu_backward":
            grad = torch.randn(*case.lead, case.out_features, dtype=x.dtype)
            args = (grad, x.detach(), weight.detach(), None if bias is None else bias.detach(), case.approximate)
        else:
            out = torch.empty(*case.lead, case.out_features, dtype=x.dtype)
            args = (x.detach(), weight.detach(), None if bias is None else bias.detach(), out, case.approximate)
        with quiet():
            report = torch.library.opcheck(op, args, raise_exception=False)
        results.append({test: outcome if outcome == "SUCCESS" else f"{type(outcome).__name__}: {outcome}"[:600]
                        for test, outcome in report.items()})
    return results


def forward(attempt: ModuleType, case: dict) -> torch.Tensor:
    """The attempt's linear_gelu on the case's tensors."""
    case = _as_case(case)
    x, weight, bias = case.tensors()
    return custom_op(attempt, "linear_gelu")(x, weight, bias, case.approximate)


def _describe(t: Any) -> dict:
    return {"shape": list(t.shape), "dtype": str(t.dtype), "device": str(t.device)}


def fake_and_real(attempt: ModuleType, case: dict, devices: tuple = ("cpu", "meta")) -> dict:
    """Shape, dtype and device of every output of linear_gelu and of linear_gelu_backward: from the real kernel on
    CPU tensors ("real"), from the fake kernel under FakeTensorMode ("fake": fake CPU tensors) and on meta tensors
    ("meta": a custom op runs its fake kernel there; tensors with no data, on another device than the CPU)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    case = _as_case(case)
    ops = {"linear_gelu": custom_op(attempt, "linear_gelu"), "linear_gelu_backward": custom_op(attempt,
                                                                                              "linear_gelu_backward")}
    x, weight, bias = case.tensors()
    grad = torch.randn(*case.lead, case.out_features, generator=torch.Generator().manual_seed(case.seed + 1),
                       dtype=x.dtype)
    args = {"linear_gelu": (x, weight, bias, case.approximate),
            "linear_gelu_backward": (grad, x, weight, bias, case.approximate)}

    def outputs(result: Any) -> list[dict]:
        return [_describe(t) for t in (result if isinstance(result, (tuple, list)) else (result,))]

    seen = {}
    for name, op in ops.items():
        seen[name] = {"real": outputs(op(*args[name]))}
        for device in devices:
            if device == "cpu":
                with FakeTensorMode() as mode:
                    fake_args = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args[name]]
                    seen[name]["fake"] = outputs(op(*fake_args))
            else:
                moved = [a.to(device) if isinstance(a, torch.Tensor) else a for a in args[name]]
                seen[name][device] = outputs(op(*moved))
    return seen


class _CallsOp(nn.Module):
    def __init__(self, op: Callable, weight: torch.Tensor, bias: Optional[torch.Tensor], approximate: str) -> None:
        super().__init__()
        self.op, self.approximate = op, approximate
        self.weight = nn.Parameter(weight)
        self.bias = nn.Parameter(bias) if bias is not None else None

    def forward(self, x):
        return self.op(x, self.weight, self.bias, self.approximate)


def export_with_dynamic_batch(attempt: ModuleType, case: dict) -> dict:
    """torch.export of a module calling linear_gelu, every leading dimension of x a `Dim`: does the fake kernel
    keep them symbolic? Returns the error text, or the output's sizes as export recorded them."""
    case = _as_case(case)
    x, weight, bias = case.tensors()
    module = _CallsOp(custom_op(attempt, "linear_gelu"), weight, bias, case.approximate)
    dims = {i: torch.export.Dim(f"d{i}", min=2) for i in range(len(case.lead))}
    try:
        with quiet():
            ep = torch.export.export(module, (x,), dynamic_shapes=(dims,))
    except Exception as exc:  # noqa: BLE001 - the check reports it
        return {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:400]}"}
    out = [n for n in ep.graph.nodes if n.op == "output"][0].args[0][0]
    sizes = [str(s) for s in out.meta["val"].shape]
    bigger = x.new_ones(*(d + 1 for d in case.lead), case.in_features)
    with torch.no_grad():
        ran = list(ep.module()(bigger).shape)
    return {"sizes": sizes, "ran_on_bigger_batch": ran}


class _CallsBackwardOp(nn.Module):
    def __init__(self, op: Callable, weight: torch.Tensor, bias: Optional[torch.Tensor], approximate: str) -> None:
        super().__init__()
        self.op, self.approximate = op, approximate
        self.weight = nn.Parameter(weight, requires_grad=False)
        self.bias = nn.Parameter(bias, requires_grad=False) if bias is not None else None

    def forward(self, grad, x):
        return self.op(grad, x, self.weight, self.bias, self.approximate)


def export_backward_with_dynamic_batch(attempt: ModuleType, case: dict) -> dict:
    """torch.export of a module calling linear_gelu_backward(grad, x, ...), every leading dimension of grad and x a
    `Dim`: does the backward op's fake kernel keep them symbolic? The error text, or each output's sizes."""
    case = _as_case(case)
    x, weight, bias = case.tensors()
    grad = torch.randn(*case.lead, case.out_features, dtype=x.dtype)
    module = _CallsBackwardOp(custom_op(attempt, "linear_gelu_backward"), weight, bias, case.approximate)
    dims = {i: torch.export.Dim(f"d{i}", min=2) for i in range(len(case.lead))}
    try:
        with quiet():
            ep = torch.export.export(module, (grad, x), dynamic_shapes=(dims, dims))
    except Exception as exc:  # noqa: BLE001 - the check reports it
        return {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:400]}"}
    outs = [n for n in ep.graph.nodes if n.op == "output"][0].args[0]
    return {"sizes": [[str(s) for s in out.meta["val"].shape] for out in outs]}


class OpRecorder(TorchDispatchMode):
    """Every operator that reaches the dispatcher while active, by name (inner calls of a custom op's kernel are
    not seen: the kernel runs with the mode popped)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func)] += 1
        return func(*args, **(kwargs or {}))


def gradients(attempt: ModuleType, case: dict) -> dict:
    """Output and gradients of sum(out * g) through the attempt's linear_gelu, eagerly, and which ops ran in the
    backward pass."""
    case = _as_case(case)
    x, weight, bias = case.tensors(requires_grad=True)
    out = custom_op(attempt, "linear_gelu")(x, weight, bias, case.approximate)
    seen = OpRecorder()
    with seen:
        (out * _grad_weights(out)).sum().backward()
    return {"out": out.detach(), "x": x.grad, "weight": weight.grad, "bias": None if bias is None else bias.grad,
            "backward_ops": dict(seen.ops)}


def gradients_of_two_calls(attempt: ModuleType, first: dict, second: dict, shared: bool | str = False,
                           op: Optional[Callable] = None) -> list[dict]:
    """Two calls of the attempt's linear_gelu (two layers), then one backward of the sum of both losses: each
    call's output and gradients. Each call's gradients depend on that call alone. `shared` "weight" (or True):
    the second call reuses the first call's weight tensor (tied layers); "x": it reuses the first call's x (two
    heads on one activation). The shared tensor's gradient, in both results, is the sum of both calls'. `op`
    replaces the attempt's op (the checks pass eager F.gelu(F.linear(...)) for the answer)."""
    op = op or custom_op(attempt, "linear_gelu")
    shared = "weight" if shared is True else shared
    calls = []
    for i, raw in enumerate((first, second)):
        case = _as_case(raw)
        x, weight, bias = case.tensors(requires_grad=True)
        if shared == "weight" and i == 1:
            weight = calls[0][1]
        if shared == "x" and i == 1:
            x = calls[0][0]
        calls.append((x, weight, bias, op(x, weight, bias, case.approximate)))
    total = sum((out * _grad_weights(out)).sum().double() for *_, out in calls)
    total.backward()
    return [{"out": out.detach(), "x": x.grad, "weight": weight.grad, "bias": None if bias is None else bias.grad}
            for x, weight, bias, out in calls]


def _grad_weights(out: torch.Tensor) -> torch.Tensor:
    """Fixed, uneven weights for the loss, so every output element's gradient differs."""
    return torch.linspace(-1.0, 2.0, out.numel(), dtype=out.dtype).reshape(out.shape)


def out_buffer(case: OpCase, layout: str, fill: float, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(buffer, out): the buffer a runtime allocated, filled with `fill`, and the view of it passed as `out`
    (katas.common.strategies.OUT_BUFFER_LAYOUTS)."""
    shape = (*case.lead, case.out_features)
    if layout == "fresh":
        buffer = torch.full(shape, fill, dtype=dtype)
        return buffer, buffer
    if layout == "a slot of a larger buffer":
        buffer = torch.full((3, *shape), fill, dtype=dtype)
        return buffer, buffer[1]
    if layout == "columns of a larger buffer":
        buffer = torch.full((*case.lead, case.out_features + 3), fill, dtype=dtype)
        return buffer, buffer[..., 1:1 + case.out_features]
    # blind round 4: views that `reshape` cannot flatten without a copy (their leading dimensions do not merge), so
    # a kernel that writes through out.reshape(...) writes into a copy (2 or more leading dimensions)
    lead, last = case.lead[:-1], case.lead[-1] if case.lead else 1
    if layout == "a middle slice and columns of a larger buffer":
        buffer = torch.full((*lead, last + 2, case.out_features + 3), fill, dtype=dtype)
        return buffer, buffer[..., 1:1 + last, 1:1 + case.out_features]
    if layout == "its two first dimensions transposed":
        buffer = torch.full((shape[1], shape[0], *shape[2:]), fill, dtype=dtype)
        return buffer, buffer.transpose(0, 1)
    if layout == "every other column of a larger buffer":
        buffer = torch.full((*case.lead, 2 * case.out_features), fill, dtype=dtype)
        return buffer, buffer[..., ::2]
    raise ValueError(layout)


def out_variant(attempt: ModuleType, case: dict, layout: str = "fresh") -> dict:
    """linear_gelu_out eagerly (into a view `layout` says of a buffer filled with 7.0) and inside
    torch.compile(backend="aot_eager") (into the same view of a zero buffer the compiled function allocates and
    returns): the whole buffer each time, and whether `out` still shares its memory after the call."""
    case = _as_case(case)
    op = custom_op(attempt, "linear_gelu_out")
    x, weight, bias = case.tensors()
    buffer, out = out_buffer(case, layout, 7.0, x.dtype)
    pointer = out.data_ptr()
    returned = op(x, weight, bias, out, case.approximate)
    same_memory = out.data_ptr() == pointer

    def allocate_and_call(x, weight, bias):
        buffer, view = out_buffer(case, layout, 0.0, x.dtype)
        op(x, weight, bias, view, case.approximate)
        return buffer * 1

    torch._dynamo.reset()
    try:
        with quiet():
            compiled = torch.compile(allocate_and_call, backend="aot_eager", fullgraph=True)(x, weight, bias)
    except Exception as exc:  # noqa: BLE001 - the check reports it
        compiled = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:400]}"
    return {"returned": repr(returned)[:200], "buffer": buffer, "out": out.clone(), "same_memory": same_memory,
            "compiled": compiled}


# --- models: the rewrite and training stages --------------------------------------------------------------

class Pair(nn.Module):
    """One Linear -> GELU pair written as `form` says, then a head."""

    FORMS = {
        "F.gelu(z)": lambda z: F.gelu(z),
        "nn.GELU()": nn.GELU(),
        "nn.GELU('tanh')": nn.GELU(approximate="tanh"),
        "F.gelu(z, approximate='tanh')": lambda z: F.gelu(z, approximate="tanh"),
        "F.gelu(z, approximate='none')": lambda z: F.gelu(z, approximate="none"),
    }

    def __init__(self, form: str, bias: bool = True, gelu_read_twice: bool = False) -> None:
        super().__init__()
        self.form, self.gelu_read_twice = form, gelu_read_twice
        self.fc = nn.Linear(4, 5, bias=bias)
        self.act = self.FORMS[form]
        self.head = nn.Linear(5, 3)

    def forward(self, x):
        g = self.act(self.fc(x))
        if self.gelu_read_twice:  # the GELU's output may have any number of readers: still one safe pair
            g = g * torch.sigmoid(g)
        return self.head(g)


class SharedOutput(nn.Module):
    """The Linear's output z has a second reader: `kind` says which."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        z = self.fc(x)
        if self.kind == "residual":
            return F.gelu(z) + z
        if self.kind == "returned":
            return F.gelu(z), z
        if self.kind == "read_before":
            gate = torch.sigmoid(z)
            return F.gelu(z) * gate
        raise ValueError(self.kind)


class GradModes(nn.Module):
    """A pair and a `with torch.no_grad():` block: `kind` says where the block ends.

    frozen_pair      the Linear and the GELU inside the block, their reader after it
    frozen_linear    the Linear inside the block, the GELU after it
    frozen_head      the pair before the block, its reader inside it
    frozen_block     the pair and its reader inside the block
    unrelated_block  the block computes something else before the pair
    """

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.fc = nn.Linear(4, 5)
        self.head = nn.Linear(5, 3)
        self.tail = nn.Linear(3, 3)

    def forward(self, x):
        if self.kind == "frozen_pair":
            with torch.no_grad():
                h = F.gelu(self.fc(x))
            return self.tail(self.head(h))
        if self.kind == "frozen_linear":
            with torch.no_grad():
                z = self.fc(x)
            return self.tail(self.head(F.gelu(z)))
        if self.kind == "frozen_head":
            h = F.gelu(self.fc(x))
            with torch.no_grad():
                y = self.head(h)
            return self.tail(y) + h.sum(-1, keepdim=True)
        if self.kind == "frozen_block":
            with torch.no_grad():
                y = self.head(F.gelu(self.fc(x)))
            return self.tail(y) + x.sum(-1, keepdim=True)
        if self.kind == "unrelated_block":
            with torch.no_grad():
                scale = x.abs().mean() + 1.0
            return self.tail(self.head(F.gelu(self.fc(x)) * scale))
        raise ValueError(self.kind)


PAIR_INPUT_WRITES = {  # katas.common.strategies.PAIR_INPUT_WRITES: into w, b (z = F.linear(t, w, b)) or through views
    "w.mul_(0.5)": lambda v: v["w"].mul_(0.5),
    "b.add_(1.0)": lambda v: v["b"].add_(1.0),
    "t[0].mul_(0.5)": lambda v: v["t"][0].mul_(0.5),
    "t.view(-1).add_(1.0)": lambda v: v["t"].view(-1).add_(1.0),
    "w.t().mul_(0.5)": lambda v: v["w"].t().mul_(0.5),
    "b[1:].zero_()": lambda v: v["b"][1:].zero_(),
    "torch.transpose(w, 0, 1).mul_(0.5)": lambda v: torch.transpose(v["w"], 0, 1).mul_(0.5),
    # chains of views (blind round 3): a view of a view writes into the input all the same
    "t[0].view(-1).mul_(0.5)": lambda v: v["t"][0].view(-1).mul_(0.5),
    "w.t()[1:].mul_(0.5)": lambda v: v["w"].t()[1:].mul_(0.5),
    "b[1:].view(-1)[0:2].zero_()": lambda v: v["b"][1:].view(-1)[0:2].zero_(),
}
CHAINED_VIEW_WRITES = ("t[0].view(-1).mul_(0.5)", "w.t()[1:].mul_(0.5)", "b[1:].view(-1)[0:2].zero_()")
# blind round 6: views the lesson's list does not name (every op that returns a view shares its input's memory), and
# w.T, which Dynamo records as getattr(w, "T")
VIEW_WRITES = {
    "t.permute(2, 0, 1).mul_(0.5)": lambda v: v["t"].permute(2, 0, 1).mul_(0.5),
    "t.unsqueeze(0).mul_(0.5)": lambda v: v["t"].unsqueeze(0).mul_(0.5),
    "w.T.mul_(0.5)": lambda v: v["w"].T.mul_(0.5),
    "w.select(0, 1).mul_(0.5)": lambda v: v["w"].select(0, 1).mul_(0.5),
    "torch.narrow(b, 0, 1, 2).zero_()": lambda v: torch.narrow(v["b"], 0, 1, 2).zero_(),
    "t.flatten().add_(1.0)": lambda v: v["t"].flatten().add_(1.0),
    "torch.movedim(w, 0, 1).mul_(0.5)": lambda v: torch.movedim(v["w"], 0, 1).mul_(0.5),
    "t.diagonal(dim1=1, dim2=2).mul_(0.5)": lambda v: v["t"].diagonal(dim1=1, dim2=2).mul_(0.5),
}
PAIR_INPUT_WRITES.update(VIEW_WRITES)
# blind round 5: the pair's input t is itself a view of a base s = torch.stack((x, x)) (shape (2, 2, 3, 4)), made
# as the text before "; " says, and the write (after "; ") goes into that base, a view of a view of it, or another
# view of it that overlaps t; every one writes into t's memory. Each write kind also says how t is made.
BASE_WRITES = {
    "t = s[0]; s.mul_(0.5)": (lambda s: s[0], lambda v: v["s"].mul_(0.5)),
    "t = s[0]; s[:, 0].mul_(0.5)": (lambda s: s[0], lambda v: v["s"][:, 0].mul_(0.5)),
    "t = s[0]; s.view(-1)[:12].add_(1.0)": (lambda s: s[0], lambda v: v["s"].view(-1)[:12].add_(1.0)),
    "t = s.view(4, 3, 4)[:2]; s.mul_(0.5)": (lambda s: s.view(4, 3, 4)[:2], lambda v: v["s"].mul_(0.5)),
    "t = s[1].view(2, 3, 4); s[1].mul_(0.5)": (lambda s: s[1].view(2, 3, 4), lambda v: v["s"][1].mul_(0.5)),
    # no element of t, but the same base: torch counts writes per base (one version counter), so a backward that
    # saved t fails all the same
    "t = s[0]; s[1].mul_(0.5)": (lambda s: s[0], lambda v: v["s"][1].mul_(0.5)),
    # blind round 6: an in-place op returns the tensor it wrote, so its result shares that tensor's memory: t a view
    # of what s.mul_(1.0) returned (that is s), or an alias a = s.mul_(1.0) made before the pair, written later
    "t = s.mul_(1.0)[0]; s.add_(1.0)": (lambda s: s.mul_(1.0)[0], lambda v: v["s"].add_(1.0)),
    "t = s[0]; a = s.mul_(1.0); a[0].add_(1.0)": (lambda s: (s[0], {"a": s.mul_(1.0)}),
                                                   lambda v: v["a"][0].add_(1.0)),
}
PAIR_INPUT_WRITES.update({kind: write for kind, (_, write) in BASE_WRITES.items()})
WRITTEN_INPUT = {kind: kind.replace("torch.transpose(", "")[0] for kind in PAIR_INPUT_WRITES}  # "t", "w" or "b"
WRITTEN_INPUT.update({kind: "t" for kind in BASE_WRITES})
WRITTEN_INPUT.update({"torch.narrow(b, 0, 1, 2).zero_()": "b", "torch.movedim(w, 0, 1).mul_(0.5)": "w"})
# blind round 6: a layout whose first step is ENTRY_OFF is called under torch.no_grad(), so Dynamo's graph starts with
# grad off and writes no switch before its first node; its result is summed under torch.enable_grad()
ENTRY_OFF = ("called under torch.no_grad()", False)


def grad_context(model: nn.Module):
    """The grad mode a model is called in: torch.no_grad() for a layout called that way, else as it is."""
    return torch.no_grad() if getattr(model, "entry_off", False) else contextlib.nullcontext()
NOT_PAIR_INPUT_WRITES = {  # katas.common.strategies.NOT_PAIR_INPUT_WRITES: no write into the pair's inputs
    "u.mul_(2.0)": lambda v: v["u"].mul_(2.0),
    "nn.ReLU()(t)": lambda v: v.__setitem__("r", v["relu"](v["t"])),
}
IN_PLACE_WRITES = {  # an in-place write to t, as katas.common.strategies.IN_PLACE_WRITES names it
    "t.mul_(0.5)": lambda t: t.mul_(0.5),
    "F.relu(t, inplace=True)": lambda t: F.relu(t, inplace=True),
    "t[0] = 0": lambda t: t.__setitem__(0, 0.0),
    "t += 1": None,  # written out in GradLayout._step: `t += 1` must be the statement Dynamo sees
    "torch.relu_(t)": lambda t: torch.relu_(t),
    "torch.mul(t, 0.5, out=t)": lambda t: torch.mul(t, 0.5, out=t),
}


class GradLayout(nn.Module):
    """A Linear -> GELU pair, its readers, maybe an unrelated value (which reads x and t, writing neither) and an
    in-place write, in the order and grad
    modes a layout of katas.common.strategies.grad_mode_layouts gives: each run of steps with grad off is one
    `with torch.no_grad():` block. A step may also sit in a block nested in it (katas.common.strategies.
    GRAD_LAYOUT_BLOCKS, blind round 4): "nested" in a second `with torch.no_grad():`, "enable" in a
    `with torch.enable_grad():` (grad on again); a run of such steps shares that inner block. With an in-place write, the pair reads t = x.detach().clone() and its Linear
    is frozen (eager autograd refuses a backward through a Linear whose saved input was written afterwards). A
    write into w or b (PAIR_INPUT_WRITES) makes the Linear F.linear(t, w, b), w and b copies of fc's parameters
    made first; u (a write into it) and r = relu(t) by nn.ReLU() are made when a step uses them, and every one of
    these is read by the returned value.

    A fifth element of the layout (blind round 3), `trains`, names which of the pair's inputs require grad, among
    "x", "w", "b": the pair is then always F.linear(t, w, b), t = x * 1 (or x.detach().clone() without "x"), w and
    b copies of fc's parameters, which require grad as `trains` says, and no write freezes anything. Eager's
    backward must still work (the checks skip a layout where it does not)."""

    def __init__(self, layout: tuple) -> None:
        super().__init__()
        steps, form = layout[1], layout[2]
        self.entry_off = bool(steps) and tuple(steps[0]) == ENTRY_OFF
        steps = steps[1:] if self.entry_off else steps
        self.trains = tuple(layout[4]) if len(layout) > 4 else None
        self.fc = nn.Linear(4, 5)
        self.act = Pair.FORMS[form]
        self.head, self.tail, self.other = nn.Linear(5, 3), nn.Linear(5, 3), nn.Linear(4, 3)
        kinds = {kind for kind, _ in steps}
        self.writes = any(kind in IN_PLACE_WRITES or kind in PAIR_INPUT_WRITES for kind in kinds)
        self.copies = any(WRITTEN_INPUT.get(kind) in ("w", "b") for kind in kinds)  # F.linear(t, w, b)
        self.base = next((BASE_WRITES[kind][0] for kind in kinds if kind in BASE_WRITES), None)  # t a view of s
        self.uses_u, self.uses_relu = "u.mul_(2.0)" in kinds, "nn.ReLU()(t)" in kinds
        self.relu = nn.ReLU()
        if self.trains is not None:
            self.copies = True
            self.fc.weight.requires_grad_("w" in self.trains)
            self.fc.bias.requires_grad_("b" in self.trains)
        elif self.writes:
            self.fc.requires_grad_(False)
        runs: list[tuple[bool, list[tuple[Any, list[str]]]]] = []  # (outside any block, [(inner block, kinds)])
        for kind, block in steps:
            outside = block is True
            if not runs or runs[-1][0] != outside:
                runs.append((outside, []))
            inner = runs[-1][1]
            if inner and inner[-1][0] == block:
                inner[-1][1].append(kind)
            else:
                inner.append((block, [kind]))
        self.runs = tuple((outside, tuple((block, tuple(kinds)) for block, kinds in inner)) for outside, inner in runs)

    def _step(self, kind: str, x, t, values: dict) -> None:
        if kind == "linear":
            values["z"] = F.linear(t, values["w"], values["b"]) if self.copies else self.fc(t)
        elif kind == "gelu":
            values["h"] = self.act(values["z"])
        elif kind in ("reader", "reader2", "unrelated"):
            y = {"reader": self.head, "reader2": self.tail}.get(kind, self.other)(values["h"] if kind != "unrelated"
                                                                                   else x * t.abs().mean())
            values["out"] = y if values.get("out") is None else values["out"] + y
        elif kind == "t += 1":
            t += 1
        elif kind in PAIR_INPUT_WRITES:
            PAIR_INPUT_WRITES[kind](values)
        elif kind in NOT_PAIR_INPUT_WRITES:
            NOT_PAIR_INPUT_WRITES[kind](values)
        else:
            IN_PLACE_WRITES[kind](t)

    def forward(self, x):
        values: dict = {"out": None, "relu": self.relu}
        if self.base is not None:  # t is a view of s (blind round 5)
            trained = self.trains is not None and "x" in self.trains
            values["s"] = torch.stack((x, x)) if trained else torch.stack((x, x)).detach()
            t = self.base(values["s"])
            if isinstance(t, tuple):  # the view, and aliases made with it (an in-place op's result)
                t, made = t
                values.update(made)
        elif self.trains is not None:
            t = x * 1 if "x" in self.trains else x.detach().clone()
        else:
            t = x.detach().clone() if self.writes else x
        values["t"] = t
        if self.copies:
            values["w"], values["b"] = self.fc.weight * 1, self.fc.bias * 1
        if self.uses_u:
            values["u"] = x.detach().clone()
        for outside, inner in self.runs:
            if outside:
                for kind in inner[0][1]:
                    self._step(kind, x, t, values)
                continue
            with torch.no_grad():
                for block, kinds in inner:  # False: in the block itself; "nested", "enable": a block inside it
                    with {False: contextlib.nullcontext, "nested": torch.no_grad,
                          "enable": torch.enable_grad}[block]():
                        for kind in kinds:
                            self._step(kind, x, t, values)
        with torch.enable_grad() if self.entry_off else contextlib.nullcontext():
            out = values["out"]
            for name in ("w", "b", "u", "r"):
                if name in values:
                    out = out + values[name].sum()
            return out + t.sum() if self.writes or self.trains is not None else out


RECIPES: dict[str, Callable[[], nn.Module]] = {
    **{f"pair {form}": (lambda form=form: Pair(form)) for form in Pair.FORMS},
    "pair F.gelu(z), Linear without bias": lambda: Pair("F.gelu(z)", bias=False),
    "pair nn.GELU('tanh'), Linear without bias": lambda: Pair("nn.GELU('tanh')", bias=False),
    "pair F.gelu(z), its output read twice": lambda: Pair("F.gelu(z)", gelu_read_twice=True),
    **{f"shared {kind}": (lambda kind=kind: SharedOutput(kind)) for kind in ("residual", "returned", "read_before")},
    **{f"grad {kind}": (lambda kind=kind: GradModes(kind))
       for kind in ("frozen_pair", "frozen_linear", "frozen_head", "frozen_block", "unrelated_block")},
}


def build(recipe: Any) -> tuple[nn.Module, torch.Tensor]:
    """A model and its input from a recipe: a name of RECIPES, or an MLPSpec. Same weights on every side."""
    if isinstance(recipe, MLPSpec):
        model = build_mlp(recipe).train()
        return model, example_input(recipe)
    with torch.random.fork_rng():
        if isinstance(recipe, (tuple, list)) and recipe[0] == "layout":
            torch.manual_seed(recipe[3])
            model = GradLayout(tuple(recipe)).train()
            return model, torch.randn(2, 3, 4)
        torch.manual_seed(7)
        model = RECIPES[recipe]().train()
        x = torch.randn(2, 3, 4)
    return model, x


def eager_run(recipe: Any, x: Optional[torch.Tensor] = None) -> dict:
    """The model's outputs and the gradients of `loss(outputs)` for every parameter and the input, eagerly."""
    model, default_x = build(recipe)
    return _run_and_backward(model, lambda x: model(x), default_x if x is None else x)


def _outputs(result: Any) -> list[torch.Tensor]:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def loss(outputs: list[torch.Tensor]) -> torch.Tensor:
    total = 0
    for out in outputs:
        if out.requires_grad:
            total = total + (out * _grad_weights(out)).sum()
    return total


def _run_and_backward(model: nn.Module, call: Callable, x: torch.Tensor) -> dict:
    x = x.detach().clone().requires_grad_()
    for p in model.parameters():
        p.grad = None
    with grad_context(model):
        outputs = _outputs(call(x))
    total = loss(outputs)
    if isinstance(total, torch.Tensor):
        total.backward()
    # copies: a later backward through the same tensors accumulates into .grad in place
    grads = {name: None if p.grad is None else p.grad.clone() for name, p in model.named_parameters()}
    grads["input"] = None if x.grad is None else x.grad.clone()
    return {"outputs": [o.detach() for o in outputs], "grads": grads}


def _dynamo_graph(model: nn.Module, x: torch.Tensor) -> tuple[torch.fx.GraphModule, list, Callable, list]:
    """Dynamo's graph of model(x), captured with grad mode on, its example inputs, and the compiled model, which
    runs the graph as it is when called (rewritten in place and recompiled, or not) with Dynamo's own handling of
    inputs and outputs; and the list of every graph the compiled model captures (one, unless it recompiles)."""
    graphs = []

    def keep(gm, example_inputs):
        graphs.append((gm, list(example_inputs)))
        return lambda *args: gm(*args)  # not gm.forward: that would keep the code from before the rewrite

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=keep, fullgraph=True)
    with quiet(), grad_context(model):
        compiled(x.detach().clone().requires_grad_())  # as _run_and_backward calls it: no recompile there
    gm, example_inputs = graphs[0]
    return gm, example_inputs, compiled, graphs


def _targets(gm: torch.fx.GraphModule, names: dict[str, str]) -> dict[str, int]:
    """How many call_function nodes of gm call each op of `names` (label -> op name as the dispatcher has it)."""
    counts = Counter()
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        target = node.target
        if target is torch._C._nn.linear:
            counts["linear"] += 1
        elif target is torch._C._nn.gelu:
            counts["gelu"] += 1
        else:
            text = str(target)
            for label, name in names.items():
                if text == name or f"{text}.default" == name:
                    counts[label] += 1
    return dict(counts)


def rewrite(attempt: ModuleType, recipe: Any) -> dict:
    """Capture the recipe's model with Dynamo (grad mode on, as in training), rewrite the graph with the attempt's
    fuse_with_rewriter, run it forward and backward, and rewrite once more.

    Returns what fuse_with_rewriter returned (twice), the graph's linear/gelu/fused node counts before and
    after, its code, how many times running it called the fused op, and the outputs and gradients of running
    the rewritten graph."""
    names = {"fused": op_name(attempt, "linear_gelu")}
    model, x = build(recipe)
    gm, example_inputs, compiled, graphs = _dynamo_graph(model, x)
    before = _targets(gm, names)
    returned = attempt.fuse_with_rewriter(gm)
    after = _targets(gm, names)
    code = gm.code
    try:
        ran = _run_and_backward(model, compiled, x)
    except RuntimeError as exc:  # e.g. a fused op whose saved input a later node wrote: its backward fails
        ran = {"outputs": [], "grads": {}, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:400]}"}
    if len(graphs) != 1:
        raise RuntimeError("kata 7 probe: running the rewritten graph made Dynamo capture a new one")
    calls = OpRecorder()
    with calls, torch.no_grad():
        gm(*example_inputs)  # the code gm runs now: a graph edited but not recompiled still runs the old code
    again = attempt.fuse_with_rewriter(gm)
    return {"returned": returned if isinstance(returned, int) else repr(returned)[:100], "again": again if
            isinstance(again, int) else repr(again)[:100], "before": before, "after": after, "code": code,
            "fused_calls": calls.ops.get(names["fused"], 0), **ran}


def train(attempt: ModuleType, recipe: Any, batches: list[list[int]]) -> dict:
    """torch.compile(model, backend=attempt.npu_training_backend, fullgraph=True), one forward and backward per
    batch shape; then the first compiled graph replayed once more with every operator it runs noted, forward and
    backward apart."""
    names = {"fused": op_name(attempt, "linear_gelu"), "fused_backward": op_name(attempt, "linear_gelu_backward")}
    model, x = build(recipe)
    compiled_graphs = []

    def noting_backend(gm, example_inputs):
        compiled = attempt.npu_training_backend(gm, example_inputs)
        compiled_graphs.append((compiled, list(example_inputs)))
        return compiled

    torch._dynamo.reset()
    compiled_model = torch.compile(model, backend=noting_backend, fullgraph=True)
    runs = []
    for shape in batches:
        batch = torch.randn(*shape, x.shape[-1], generator=torch.Generator().manual_seed(sum(shape)), dtype=x.dtype)
        with quiet():
            runs.append({"input": batch, **_run_and_backward(model, compiled_model, batch)})
    compiled, example_inputs = compiled_graphs[0]
    forward_ops, backward_ops = OpRecorder(), OpRecorder()
    with forward_ops:
        outputs = compiled(*example_inputs)
    with backward_ops:
        total = loss([o for o in _outputs(outputs) if isinstance(o, torch.Tensor)])
        if isinstance(total, torch.Tensor):
            total.backward()
    for t in example_inputs:
        t.grad = None

    def labelled(counter: Counter) -> dict:
        return {label: counter.get(name, 0) for label, name in names.items()} | {
            "aten.gelu": counter.get("aten.gelu.default", 0), "aten.gelu_backward": counter.get(
                "aten.gelu_backward.default", 0)}

    return {"runs": runs, "graphs": len(compiled_graphs), "forward": labelled(forward_ops.ops),
            "backward": labelled(backward_ops.ops)}
