"""Kata 6 reference solution: guards, recompiles and a shape-static NPU."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn as nn
from torch.fx.experimental.proxy_tensor import make_fx

from katas.common.npu import NPU, NPUFallbackWarning, NPUProgram

RECOMPILE_LIMIT = 8  # torch._dynamo.config.recompile_limit in torch 2.13


# --- Part 1: predict ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Call:
    shape: tuple[int, ...]
    n: int = 1
    dtype: str = "float32"


@dataclass(frozen=True)
class Outcome:
    kind: str
    symbolic: frozenset[str] = frozenset()


MIN_SYMBOLIC_SIZE = 2  # sizes 0 and 1 are always specialised


@dataclass(frozen=True)
class _Graph:
    """What one cached graph's guards accept: per dimension a size, or None for any size from MIN_SYMBOLIC_SIZE;
    groups of dimensions that must stay equal (duck sizing); n's value, or None for any int; the dtype."""

    sizes: tuple[int | None, ...]
    equal: tuple[tuple[int, ...], ...]
    n: int | None
    dtype: str

    def accepts(self, call: Call) -> bool:
        if call.dtype != self.dtype or len(call.shape) != len(self.sizes):
            return False
        for want, got in zip(self.sizes, call.shape):
            if (want is None and got < MIN_SYMBOLIC_SIZE) or (want is not None and want != got):
                return False
        if any(len({call.shape[i] for i in group}) > 1 for group in self.equal):
            return False
        return self.n is None or self.n == call.n


def _inputs(call: Call) -> dict[str, int]:
    return {**{f"x.{i}": size for i, size in enumerate(call.shape)}, "n": call.n}


def _can_be_symbolic(name: str, value: int) -> bool:
    """0/1 specialisation: a size below MIN_SYMBOLIC_SIZE stays static; an int may take any value."""
    return not name.startswith("x.") or value >= MIN_SYMBOLIC_SIZE


def _symbolic(dynamic: bool | None, call: Call, changed: set[str]) -> set[str]:
    """The inputs a new graph may keep symbolic: none, the ones that changed (automatic dynamic), or all."""
    if dynamic is True:
        return set(_inputs(call))
    if dynamic is False:
        return set()
    return set(changed)


def _duck_sized(symbolic: set[str], changed: set[str]) -> set[str]:
    """Dimensions made symbolic up front share a symbol when equal; the ones seen changing get their own."""
    return symbolic - changed


def _compile(call: Call, symbolic: set[str], duck: set[str]) -> tuple[_Graph, frozenset[str]]:
    """The graph Dynamo traces for `call` when the `symbolic` inputs may be symbolic."""
    values = _inputs(call)
    kept = {name for name in symbolic if _can_be_symbolic(name, values[name])}
    sizes = tuple(None if f"x.{i}" in kept else size for i, size in enumerate(call.shape))
    groups: dict[int, list[int]] = {}
    for i, size in enumerate(call.shape):
        if f"x.{i}" in kept and f"x.{i}" in duck:
            groups.setdefault(size, []).append(i)
    equal = tuple(tuple(group) for group in groups.values() if len(group) > 1)
    graph = _Graph(sizes, equal, None if "n" in kept else call.n, call.dtype)
    return graph, frozenset(kept)


def _served(graphs: list[_Graph], call: Call) -> bool:
    """Dynamo tries every cached graph's guards, not only the newest graph's."""
    return any(graph.accepts(call) for graph in graphs)


RANK = "rank of x"  # in the frame's memory: x's rank, or None once it has changed (then every dimension is)


def _remember(seen: dict[str, int | None], call: Call) -> set[str]:
    """Update the frame's memory of each input's value (None once it has changed); return this call's inputs
    that have changed. A change of x's rank changes every dimension of x, for good."""
    values = {**_inputs(call), RANK: len(call.shape)}
    for name, value in values.items():
        if name in seen and seen[name] != value:
            seen[name] = None
        seen.setdefault(name, value)
    every_dimension = seen[RANK] is None
    return {name for name in _inputs(call)
            if seen.get(name) is None or (every_dimension and name.startswith("x."))}


def predict(calls: Sequence[Call], dynamic: bool | None = None) -> list[Outcome]:
    graphs: list[_Graph] = []
    seen: dict[str, int | None] = {}
    outcomes = []
    for call in calls:
        if _served(graphs, call):
            outcomes.append(Outcome("reuse"))
        elif len(graphs) >= RECOMPILE_LIMIT:
            outcomes.append(Outcome("eager"))
        else:
            changed = _remember(seen, call)
            symbolic = _symbolic(dynamic, call, changed)
            graph, kept = _compile(call, symbolic, _duck_sized(symbolic, changed))
            graphs.append(graph)
            outcomes.append(Outcome("compile", kept))
    return outcomes


# --- Part 2: fix -------------------------------------------------------------------------------------------

class FixedDecayingHead(nn.Module):
    def __init__(self, features: int = 4, rate: float = 0.9) -> None:
        super().__init__()
        self.proj = nn.Linear(features, features)
        self.rate = rate
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.proj(x) * self.rate ** self.calls


class FixedRunningMean(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("total", torch.zeros(()))
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.total = self.total + x
        self.count += 1
        return self.total / self.count


def fixed_rowwise_normalize(x: torch.Tensor) -> torch.Tensor:
    return x / torch.linalg.vector_norm(x, dim=1, keepdim=True).clamp_min(1e-6)


# --- Part 3: serve a shape-static NPU ------------------------------------------------------------------------

class BucketedNPU:
    def __init__(self, model: nn.Module, buckets: Sequence[int] = (1, 2, 4, 8)) -> None:
        self.model = model
        self.buckets = tuple(sorted(buckets))
        self.programs: dict[int, NPUProgram] = {}
        self.fallbacks = 0

    def _bucket_for(self, batch: int) -> int | None:
        """The smallest bucket that holds `batch`, or None past the largest."""
        return next((b for b in self.buckets if b >= batch), None)

    def _program(self, bucket: int, like: torch.Tensor) -> NPUProgram:
        if bucket not in self.programs:
            example = like.new_zeros((bucket, *like.shape[1:]))
            with torch.no_grad():
                gm = make_fx(self.model)(example)
            self.programs[bucket] = NPU.compile(gm, [example], name=f"bucket{bucket}")
        return self.programs[bucket]

    def _on_cpu(self, x: torch.Tensor) -> torch.Tensor:
        self.fallbacks += 1
        warnings.warn(f"batch {x.shape[0]} is larger than the largest bucket ({self.buckets[-1]}): it runs on the "
                      f"CPU", NPUFallbackWarning, stacklevel=3)
        with torch.no_grad():
            return self.model(x)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        batch = x.shape[0]
        bucket = self._bucket_for(batch)
        if bucket is None:
            return self._on_cpu(x)
        padded = torch.cat([x, x.new_zeros((bucket - batch, *x.shape[1:]))]) if bucket > batch else x
        return self._program(bucket, x)(padded)[:batch]
