"""Random MLPs described by plain data, so a failing example can be printed, shrunk and rebuilt.

`MLPSpec` says everything about a model: layer widths, bias, activation, whether a Linear's output is
also read elsewhere (residual) or returned, the input's batch shape, dtype, and whether the model calls
nn.Modules or torch.nn.functional. `build_mlp(spec)` makes the model, `example_input(spec)` its input,
`describe(spec)` the text a learner sees for a counterexample. `wrap_model(model, wrapping, in_features)`
embeds a model inside torch.cond or `torch.no_grad()`, or after a custom op (WRAPPINGS; kata 1's fuzz).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

# activation name -> (module factory or None, functional form)
ACTIVATIONS = {
    "gelu": (lambda n: nn.GELU(), lambda t: F.gelu(t)),
    "gelu_tanh": (lambda n: nn.GELU(approximate="tanh"), lambda t: F.gelu(t, approximate="tanh")),
    "relu": (lambda n: nn.ReLU(), F.relu),
    "sigmoid": (lambda n: nn.Sigmoid(), torch.sigmoid),
    "tanh": (lambda n: nn.Tanh(), torch.tanh),
    "silu": (lambda n: nn.SiLU(), F.silu),
    "none": (None, lambda t: t),
    # ops the simulated NPU does not support (katas 4 and 5 insert them mid-graph)
    "layer_norm": (lambda n: nn.LayerNorm(n), None),
    "softmax": (lambda n: nn.Softmax(dim=-1), lambda t: F.softmax(t, dim=-1)),
    "sin": (None, torch.sin),
    "cumsum": (None, lambda t: torch.cumsum(t, dim=-1)),
}
NPU_FRIENDLY_ACTIVATIONS = ("gelu", "gelu_tanh", "relu", "sigmoid", "tanh", "silu", "none")
CPU_ONLY_ACTIVATIONS = ("layer_norm", "softmax", "sin", "cumsum")
REUSES = ("none", "residual", "return")


@dataclass(frozen=True)
class LayerSpec:
    out_features: int
    bias: bool = True
    activation: str = "gelu"
    reuse: str = "none"  # "residual": activation(z) + z; "return": z is also a model output


@dataclass(frozen=True)
class MLPSpec:
    in_features: int
    layers: tuple[LayerSpec, ...]
    batch_shape: tuple[int, ...] = (2,)
    dtype: str = "float32"
    style: str = "modules"  # "modules": nn.Linear/nn.GELU submodules; "functional": F.linear/F.gelu calls
    seed: int = 0

    def __post_init__(self) -> None:
        for layer in self.layers:
            if layer.activation not in ACTIVATIONS:
                raise ValueError(f"unknown activation {layer.activation!r}")
            if layer.reuse not in REUSES:
                raise ValueError(f"unknown reuse {layer.reuse!r}")
        if self.style not in ("modules", "functional"):
            raise ValueError(f"unknown style {self.style!r}")

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)


class RandomMLP(nn.Module):
    """The model an MLPSpec describes. Submodules are named fc0, act0, fc1, act1, ... for readable graphs."""

    def __init__(self, spec: MLPSpec) -> None:
        super().__init__()
        self.spec = spec
        width = spec.in_features
        for i, layer in enumerate(spec.layers):
            setattr(self, f"fc{i}", nn.Linear(width, layer.out_features, bias=layer.bias))
            make_module, functional = ACTIVATIONS[layer.activation]
            if make_module is not None and (spec.style == "modules" or functional is None):
                setattr(self, f"act{i}", make_module(layer.out_features))
            width = layer.out_features

    def _activate(self, i: int, z: torch.Tensor) -> torch.Tensor:
        if hasattr(self, f"act{i}"):
            return getattr(self, f"act{i}")(z)
        return ACTIVATIONS[self.spec.layers[i].activation][1](z)

    def _linear(self, i: int, h: torch.Tensor) -> torch.Tensor:
        fc = getattr(self, f"fc{i}")
        return fc(h) if self.spec.style == "modules" else F.linear(h, fc.weight, fc.bias)

    def forward(self, x: torch.Tensor):
        extra = []
        h = x
        for i, layer in enumerate(self.spec.layers):
            z = self._linear(i, h)
            a = self._activate(i, z)
            if layer.reuse == "residual":
                a = a + z
            elif layer.reuse == "return":
                extra.append(z)
            h = a
        return (h, *extra) if extra else h


def build_mlp(spec: MLPSpec) -> RandomMLP:
    """The model `spec` describes, with weights drawn from `spec.seed`, in eval mode."""
    with torch.random.fork_rng():
        torch.manual_seed(spec.seed)
        model = RandomMLP(spec).to(spec.torch_dtype)
    return model.eval()


def example_input(spec: MLPSpec, seed: int | None = None) -> torch.Tensor:
    generator = torch.Generator().manual_seed(spec.seed + 1 if seed is None else seed)
    return torch.randn(*spec.batch_shape, spec.in_features, generator=generator, dtype=spec.torch_dtype)


def describe(spec: MLPSpec) -> str:
    """A counterexample as a person reads it: one line per layer, reuse spelled out."""
    calls = "nn.Module calls" if spec.style == "modules" else "torch.nn.functional calls"
    shape = (*spec.batch_shape, spec.in_features)
    lines = [f"MLP with {calls}, input shape {shape} {spec.dtype}, weight seed {spec.seed}"]
    width = spec.in_features
    for i, layer in enumerate(spec.layers):
        bias = "bias" if layer.bias else "no bias"
        act = {"none": "no activation", "gelu_tanh": "GELU(approximate='tanh')", "gelu": "GELU"}.get(
            layer.activation, layer.activation)
        reuse = {
            "none": "",
            "residual": f"   -> output is {act}(z{i}) + z{i}: the Linear output z{i} has two users",
            "return": f"   -> z{i} is also returned: the Linear output has two users",
        }[layer.reuse]
        lines.append(f"  z{i} = fc{i}: Linear({width} -> {layer.out_features}, {bias}); then {act}{reuse}")
        width = layer.out_features
    return "\n".join(lines)


# How kata 1's fuzz embeds a random MLP in a bigger model, to meet the structure real captures contain.
WRAPPINGS = ("plain", "cond", "no_grad", "custom_op")


class CondWrapped(nn.Module):
    """torch.cond on the data: one branch runs the wrapped model on x, the other on -x."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return torch.cond(x.amax() > 0, lambda t: self.inner(t), lambda t: self.inner(-t), (x,))


class NoGradWrapped(nn.Module):
    """The wrapped model inside `with torch.no_grad():`."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        with torch.no_grad():
            return self.inner(x)


class CustomOpFirst(nn.Module):
    """kata::linear_gelu on the input with its own square weight, then the wrapped model."""

    def __init__(self, inner: nn.Module, features: int) -> None:
        super().__init__()
        self.inner = inner
        with torch.random.fork_rng():
            torch.manual_seed(features)
            self.weight, self.bias = nn.Parameter(torch.randn(features, features)), nn.Parameter(torch.randn(features))

    def forward(self, x):
        return self.inner(torch.ops.kata.linear_gelu(x, self.weight, self.bias))


def wrap_model(model: nn.Module, wrapping: str, in_features: int) -> nn.Module:
    """`model` embedded as WRAPPINGS names; "plain" returns it unchanged. The result is in eval mode."""
    if wrapping == "plain":
        return model
    if wrapping == "cond":
        wrapped = CondWrapped(model)
    elif wrapping == "no_grad":
        wrapped = NoGradWrapped(model)
    elif wrapping == "custom_op":
        from katas.common import ops  # noqa: F401 - registers torch.ops.kata.linear_gelu

        wrapped = CustomOpFirst(model, in_features).to(next(model.parameters()).dtype)
    else:
        raise ValueError(f"unknown wrapping {wrapping!r}; choose from {', '.join(WRAPPINGS)}")
    return wrapped.eval()


def describe_wrapping(wrapping: str) -> str:
    """One line for a counterexample: how the MLP was embedded."""
    return {
        "plain": "the MLP alone",
        "cond": "inside torch.cond(x.amax() > 0, mlp(x), mlp(-x))",
        "no_grad": "inside `with torch.no_grad():`",
        "custom_op": "after torch.ops.kata.linear_gelu(x, w, b) on the input",
    }[wrapping]
