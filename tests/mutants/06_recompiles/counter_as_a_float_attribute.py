"""Mistake (blind round 6 found it; once an alternative from blind round 2, correct_guardsource.py with
FixedDecayingHead's counter kept as a Python FLOAT attribute of the instance): the guard table says a float attribute
becomes an input of Dynamo's graph once it has changed, so 12 calls are 2 graphs with a backend that runs that graph
as it is. torch.compile's default backend runs aot_autograd first, which guards on the float's value again: with
backend="aot_eager" every call compiles again and the ninth raises FailOnRecompileLimitHit. README.md, 'Fix': "A
Python float attribute of the instance ... is not a fix".
"""
from __future__ import annotations

import bisect
import warnings
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

from katas.common.npu import NPU, NPUFallbackWarning  # noqa: F401 - Part 3 needs them

KILLED_BY = ('decaying_head_compiles_once', 'fixes_keep_constructor_arguments')

RECOMPILE_LIMIT = 8  # torch._dynamo.config.recompile_limit in torch 2.13


# --- Part 1: predict. README.md, "Predict" ------------------------------------------------------------------

@dataclass(frozen=True)
class Call:
    """One call `compiled(x, n)` of suspects.scaled_relu: x = torch.randn(*shape, dtype=dtype), n a Python int."""

    shape: tuple[int, ...]
    n: int = 1
    dtype: str = "float32"  # "float32" or "float16"


@dataclass(frozen=True)
class Outcome:
    """What one call did (see the stub's docstring)."""

    kind: str
    symbolic: frozenset[str] = frozenset()


_CHANGED = object()  # the frame's memory of an input once its value has changed


def _guard_source(call: Call, symbolic: set[str], duck: bool, changed: set[str]) -> str:
    """The guards of a graph compiled for `call`, as one Python expression over `shape`, `n` and `dtype`."""
    terms = [f"dtype == {call.dtype!r}", f"len(shape) == {len(call.shape)}"]
    first_of_size: dict[int, int] = {}
    for i, size in enumerate(call.shape):
        name = f"x.{i}"
        if name not in symbolic:
            terms.append(f"shape[{i}] == {size}")
            continue
        terms.append(f"shape[{i}] >= 2")
        if duck and name not in changed:  # duck sizing: equal sizes share one symbol, so they must stay equal
            if size in first_of_size:
                terms.append(f"shape[{i}] == shape[{first_of_size[size]}]")
            else:
                first_of_size[size] = i
    if "n" not in symbolic:
        terms.append(f"n == {call.n}")
    return " and ".join(terms)


def predict(calls: Sequence[Call], dynamic: bool | None = None) -> list[Outcome]:
    """One Outcome per call of `torch.compile(scaled_relu, dynamic=dynamic)`, right after torch._dynamo.reset()."""
    cache: list[tuple[str, object]] = []  # (guard source, compiled guard code), oldest first
    memory: dict[str, object] | None = None  # the frame's memory: "rank", "x.i", "n" -> value or _CHANGED
    outcomes: list[Outcome] = []
    for call in calls:
        scope = {"shape": tuple(call.shape), "n": call.n, "dtype": call.dtype}
        if any(eval(code, {}, scope) for _, code in cache):  # noqa: S307 - our own guard text
            outcomes.append(Outcome("reuse"))
            continue
        if len(cache) >= RECOMPILE_LIMIT:
            outcomes.append(Outcome("eager"))
            continue
        # the frame's memory, updated by this compile
        now = {"n": call.n, **{f"x.{i}": size for i, size in enumerate(call.shape)}}
        if memory is None:
            memory = {"rank": len(call.shape), **now}
        elif memory["rank"] is _CHANGED or memory["rank"] != len(call.shape):
            memory = {"rank": _CHANGED, "n": memory["n"] if memory["n"] == call.n else _CHANGED}
        else:
            memory = {key: (old if old == now.get(key, old) else _CHANGED) for key, old in memory.items()}
        if memory["rank"] is _CHANGED:
            changed = {key for key in now if key != "n"} | ({"n"} if memory["n"] is _CHANGED else set())
        else:
            changed = {key for key, value in memory.items() if value is _CHANGED}
        if dynamic is False:
            wanted: set[str] = set()
        elif dynamic is True:
            wanted = set(now)
        else:
            wanted = set(changed)
        symbolic = {key for key in wanted if key == "n" or now[key] not in (0, 1)}
        source = _guard_source(call, symbolic, duck=dynamic is True, changed=changed)
        cache.append((source, compile(source, "<guards>", "eval")))
        outcomes.append(Outcome("compile", frozenset(symbolic)))
    return outcomes


# --- Part 2: fix ---------------------------------------------------------------------------------------------

class FixedDecayingHead(nn.Module):
    """suspects.DecayingHead without a recompile per call: the decay factor rate**k lives in a buffer."""

    def __init__(self, features: int = 4, rate: float = 0.9) -> None:
        super().__init__()
        self.proj = nn.Linear(features, features)
        self.rate = rate
        self.calls = 0.0  # a float attribute: an input of the graph once it has changed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1.0
        return self.proj(x) * self.rate ** self.calls


class FixedRunningMean(nn.Module):
    """suspects.RunningMean without a recompile per call: an incremental mean and a count, in buffers."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))
        self.register_buffer("mean", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.count += 1
        self.mean = self.mean + (x - self.mean) / self.count
        return self.mean


def fixed_rowwise_normalize(x: torch.Tensor) -> torch.Tensor:
    """suspects.rowwise_normalize without a graph per batch size."""
    return F.normalize(x, p=2.0, dim=1, eps=1e-6)


# --- Part 3: serve a shape-static NPU ------------------------------------------------------------------------

class BucketedNPU:
    """Serve `model` on the simulated NPU with a few static batch sizes (README.md, "Buckets")."""

    def __init__(self, model: nn.Module, buckets: Sequence[int] = (1, 2, 4, 8)) -> None:
        self.fallbacks = 0
        self.model = model
        self.buckets = sorted(set(int(b) for b in buckets))
        self.programs: dict[int, object] = {}

    def _program(self, bucket: int, x: torch.Tensor):
        if bucket not in self.programs:
            example = torch.zeros((bucket, *x.shape[1:]), dtype=x.dtype)
            with torch.no_grad():
                gm = make_fx(self.model)(example)
            self.programs[bucket] = NPU.compile(gm, [example], name=f"bucket_{bucket}")
        return self.programs[bucket]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        batch = x.shape[0]
        at = bisect.bisect_left(self.buckets, batch)
        if at == len(self.buckets):
            warnings.warn(f"BucketedNPU: batch size {batch} is larger than the largest bucket "
                          f"{self.buckets[-1] if self.buckets else None}; running on the CPU", NPUFallbackWarning,
                          stacklevel=2)
            self.fallbacks += 1
            with torch.no_grad():
                return self.model(x)
        bucket = self.buckets[at]
        padded = F.pad(x, (0, 0, 0, bucket - batch))
        return self._program(bucket, x)(padded)[:batch]
