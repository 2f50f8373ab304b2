"""An independent attempt written from README.md alone, with a different design than the reference:

- predict: every cached graph is a closure over its own guard list (a list of predicates, as Dynamo's guard
  manager holds them); the frame's memory is the set of inputs ever seen changing plus the first values;
- FixedDecayingHead keeps the counter in a buffer and reads it with .item() for the Python-float power:
  torch 2.13 captures .item() into the graph (an unbacked value), so this stays one graph;
- FixedRunningMean keeps a running mean with a lazily shaped buffer (x - mean) / count updates;
- fixed_rowwise_normalize is F.normalize with eps=1e-6 (the same max(norm, eps) rule);
- BucketedNPU compiles every bucket on the first call, largest first, with make_fx on the real weights.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

from katas.common.npu import NPU, NPUFallbackWarning

RECOMPILE_LIMIT = 8


@dataclass(frozen=True)
class Call:
    shape: tuple[int, ...]
    n: int = 1
    dtype: str = "float32"


@dataclass(frozen=True)
class Outcome:
    kind: str
    symbolic: frozenset[str] = frozenset()


def _guards_for(call: Call, symbolic: set[str], shared: tuple[bool, ...]) -> tuple[list[Callable[[Call], bool]], frozenset]:
    guards: list[Callable[[Call], bool]] = [lambda c, d=call.dtype: c.dtype == d,
                                            lambda c, r=len(call.shape): len(c.shape) == r]
    kept = set()
    symbol_of: dict[int, int] = {}
    for i, size in enumerate(call.shape):
        if f"x.{i}" in symbolic and size >= 2:
            kept.add(f"x.{i}")
            guards.append(lambda c, i=i: c.shape[i] >= 2)
            if shared[i]:  # duck sizing: equal sizes share one symbol
                if size in symbol_of:
                    guards.append(lambda c, i=i, j=symbol_of[size]: c.shape[i] == c.shape[j])
                else:
                    symbol_of[size] = i
        else:
            guards.append(lambda c, i=i, s=size: c.shape[i] == s)
    if "n" in symbolic:
        kept.add("n")
    else:
        guards.append(lambda c, n=call.n: c.n == n)
    return guards, frozenset(kept)


def predict(calls: Sequence[Call], dynamic: bool | None = None) -> list[Outcome]:
    cache: list[list[Callable[[Call], bool]]] = []
    first: dict[str, int] = {}
    changed: set[str] = set()
    result = []
    for call in calls:
        if any(all(g(call) for g in guards) for guards in cache):
            result.append(Outcome("reuse"))
            continue
        if len(cache) == RECOMPILE_LIMIT:
            result.append(Outcome("eager"))
            continue
        values = {f"x.{i}": s for i, s in enumerate(call.shape)} | {"n": call.n}
        for name, value in values.items():
            if first.setdefault(name, value) != value:
                changed.add(name)
        wanted = set(values) if dynamic else (set() if dynamic is False else set(changed))
        shared = tuple(dynamic is True and f"x.{i}" not in changed for i in range(len(call.shape)))
        guards, kept = _guards_for(call, wanted, shared)
        cache.append(guards)
        result.append(Outcome("compile", kept))
    return result


class FixedDecayingHead(nn.Module):
    def __init__(self, features: int = 4, rate: float = 0.9) -> None:
        super().__init__()
        self.proj = nn.Linear(features, features)
        self.rate = rate
        self.register_buffer("calls", torch.tensor(0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.add_(1)
        return self.proj(x) * self.rate ** self.calls.item()


class FixedRunningMean(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(()))
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.count += 1
        self.mean = self.mean + (x - self.mean) / self.count
        return self.mean


def fixed_rowwise_normalize(x: torch.Tensor) -> torch.Tensor:
    return F.normalize(x, dim=1, eps=1e-6)


class BucketedNPU:
    def __init__(self, model: nn.Module, buckets: Sequence[int] = (1, 2, 4, 8)) -> None:
        self.model, self.sizes, self.fallbacks = model, sorted(set(buckets)), 0
        self.compiled: dict[int, object] | None = None

    def _compile_all(self, like: torch.Tensor) -> None:
        self.compiled = {}
        for size in reversed(self.sizes):
            example = torch.zeros(size, like.shape[1], dtype=like.dtype)
            with torch.no_grad():
                graph = make_fx(lambda t: self.model(t))(example)
            self.compiled[size] = NPU.compile(graph, [example], name=f"b{size}")

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.shape[0]
        fits = [s for s in self.sizes if s >= rows]
        if not fits:
            warnings.warn(f"BucketedNPU: batch of {rows} rows exceeds bucket {self.sizes[-1]}; CPU fallback",
                          NPUFallbackWarning)
            self.fallbacks += 1
            with torch.no_grad():
                return self.model(x)
        if self.compiled is None:
            self._compile_all(x)
        size = fits[0]
        padded = F.pad(x, (0, 0, 0, size - rows))
        return self.compiled[size](padded)[:rows]
