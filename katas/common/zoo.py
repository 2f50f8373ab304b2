"""Hand-picked models the hidden checks use, each small and each showing one feature of graph capture.

`ZOO[name].build()` returns a fresh model in eval mode; `ZOO[name].inputs()` its example inputs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    """Linear -> GELU -> Linear, the brief's running example."""

    def __init__(self, d_in: int = 4, d_hidden: int = 8, d_out: int = 3) -> None:
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(d_in, d_hidden), nn.GELU(), nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Residual(nn.Module):
    """x + fc2(gelu(fc1(x))), with a free function (torch.relu) in forward."""

    def __init__(self, d: int = 6) -> None:
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(d, d), nn.GELU(approximate="tanh"), nn.Linear(d, d)

    def forward(self, x):
        return torch.relu(x + self.fc2(self.act(self.fc1(x))))


class NormBlock(nn.Module):
    """LayerNorm then Linear then a max over features: getitem appears in aten graphs."""

    def __init__(self, d: int = 6) -> None:
        super().__init__()
        self.norm, self.fc = nn.LayerNorm(d), nn.Linear(d, d)

    def forward(self, x):
        values, _ = self.fc(self.norm(x)).max(dim=-1)
        return values


class Attention(nn.Module):
    """Single-head self-attention: matmul, transpose, softmax, view; method calls in forward."""

    def __init__(self, d: int = 8) -> None:
        super().__init__()
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.d = d

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        return self.out(scores.softmax(dim=-1) @ v)


class Functional(nn.Module):
    """The MLP written with torch.nn.functional on its own parameters: no leaf modules to call."""

    def __init__(self, d_in: int = 4, d_hidden: int = 8) -> None:
        super().__init__()
        self.w1, self.b1 = nn.Parameter(torch.randn(d_hidden, d_in)), nn.Parameter(torch.randn(d_hidden))
        self.w2 = nn.Parameter(torch.randn(d_in, d_hidden))

    def forward(self, x):
        return F.linear(F.relu(F.linear(x, self.w1, self.b1)), self.w2).sigmoid()


class Pointwise(nn.Module):
    """Only core ATen ops even before decomposition: relu, add, mul."""

    def forward(self, x):
        return torch.relu(x) * 2 + x


class Renamed(nn.Module):
    """Submodule names that do not say what the module is: `proj` and `head` are Linears, `act` is a Softmax,
    and the Sequential's children are called `block.0` and `block.1`. Only the module's type tells the op."""

    def __init__(self, d: int = 6) -> None:
        super().__init__()
        self.proj, self.act = nn.Linear(d, d), nn.Softmax(dim=-1)
        self.block = nn.Sequential(nn.Linear(d, d), nn.SiLU())
        self.head = nn.Linear(d, 3)

    def forward(self, x):
        return self.head(self.block(self.act(self.proj(x))))


class FusedLinearGelu(nn.Module):
    """A model that already calls the fused op: kata::linear_gelu(x, fc1.weight, fc1.bias), then fc2, plus x."""

    def __init__(self, d_in: int = 4, d_hidden: int = 8) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_in, d_hidden), nn.Linear(d_hidden, d_in)

    def forward(self, x):
        return self.fc2(torch.ops.kata.linear_gelu(x, self.fc1.weight, self.fc1.bias)) + x


@dataclass(frozen=True)
class ZooModel:
    name: str
    factory: Callable[[], nn.Module]
    input_shape: tuple[int, ...]

    def build(self) -> nn.Module:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            return self.factory().eval()

    def inputs(self) -> tuple[torch.Tensor, ...]:
        return (torch.randn(*self.input_shape, generator=torch.Generator().manual_seed(1)),)


ZOO = {
    model.name: model
    for model in (
        ZooModel("mlp", MLP, (2, 4)),
        ZooModel("mlp_3d", MLP, (2, 5, 4)),
        ZooModel("residual", Residual, (3, 6)),
        ZooModel("norm_block", NormBlock, (3, 6)),
        ZooModel("attention", Attention, (2, 5, 8)),
        ZooModel("functional", Functional, (3, 4)),
        ZooModel("pointwise", Pointwise, (3, 4)),
        ZooModel("renamed", Renamed, (3, 6)),
        ZooModel("fused_linear_gelu", FusedLinearGelu, (2, 3, 4)),
    )
}
