"""Random MLPs described by plain data, so a failing example can be printed, shrunk and rebuilt.

`MLPSpec` says everything about a model: layer widths, bias, activation, whether a Linear's output is
also read elsewhere (residual) or returned, the input's batch shape, dtype, and whether the model calls
nn.Modules or torch.nn.functional. `build_mlp(spec)` makes the model, `example_input(spec)` its input,
`describe(spec)` the text a learner sees for a counterexample.
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
