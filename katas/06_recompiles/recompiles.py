"""Kata 6 — guards, recompiles and a shape-static NPU. This is the only file you edit for this kata.

Read katas/06_recompiles/README.md first: it explains what Dynamo guards on, when it compiles again, and how a
device that only runs static shapes is served. The suspects live in suspects.py (read-only).
Check your work with `make kata N=6`; ask for a hint with `make hint N=6`.
Run `python katas/06_recompiles/recompiles.py` to print your predictions next to what Dynamo really does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn as nn

from katas.common.npu import NPU, NPUFallbackWarning  # noqa: F401 - Part 3 needs them

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
    """What one call did.

    kind: "compile" (Dynamo traced a new graph for this call), "reuse" (a graph compiled earlier served it), or
          "eager" (no graph fits and the recompile limit is reached: the call runs uncompiled).
    symbolic: for "compile" only, the inputs the new graph keeps symbolic: "x.0", "x.1", ... for x's dimensions,
          "n" for the int. Empty for a fully static graph, and for "reuse" and "eager".
    """

    kind: str
    symbolic: frozenset[str] = frozenset()


def predict(calls: Sequence[Call], dynamic: bool | None = None) -> list[Outcome]:
    """One Outcome per call: what `torch.compile(scaled_relu, dynamic=dynamic)` does when it is called with each
    of `calls` in order, right after torch._dynamo.reset(). Work it out from the rules in README.md, "Predict";
    do not run Dynamo here (the checks compare your rules with what Dynamo really does)."""
    raise NotImplementedError("predict: model Dynamo's cache and guards — README.md, 'Predict'")


# --- Part 2: fix. Same constructor arguments, parameters and outputs as the suspect of the same name, but
# --- torch.compile(..., fullgraph=True) compiles at most 2 graphs over the calls of README.md, "Fix".

class FixedDecayingHead(nn.Module):
    """suspects.DecayingHead without a recompile per call."""

    def __init__(self, features: int = 4, rate: float = 0.9) -> None:
        super().__init__()
        raise NotImplementedError("FixedDecayingHead: README.md, 'Fix'")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("FixedDecayingHead.forward: README.md, 'Fix'")


class FixedRunningMean(nn.Module):
    """suspects.RunningMean without a recompile per call."""

    def __init__(self) -> None:
        super().__init__()
        raise NotImplementedError("FixedRunningMean: README.md, 'Fix'")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("FixedRunningMean.forward: README.md, 'Fix'")


def fixed_rowwise_normalize(x: torch.Tensor) -> torch.Tensor:
    """suspects.rowwise_normalize without a graph per batch size."""
    raise NotImplementedError("fixed_rowwise_normalize: README.md, 'Fix'")


# --- Part 3: serve a shape-static NPU. README.md, "Buckets" ----------------------------------------------------

class BucketedNPU:
    """Serve `model` on the simulated NPU, which only runs programs compiled for one static shape.

    `model` maps a (batch, features) float32 tensor to a (batch, out) tensor, row by row (each output row depends
    only on its own input row), with ops the NPU runs, and its weights do not change while it is served.
    Calling a BucketedNPU with x:
    - pads x with zero rows up to the smallest bucket that holds its batch, runs the NPU program compiled for
      that bucket (compiled on first use, or ahead of time: at most one program per bucket, ever), and returns
      the first `batch` rows: the model's answer for x;
    - a batch larger than the largest bucket runs `model` on the CPU instead, warns with NPUFallbackWarning
      naming the batch size, and adds one to `self.fallbacks`.
    """

    def __init__(self, model: nn.Module, buckets: Sequence[int] = (1, 2, 4, 8)) -> None:
        self.fallbacks = 0
        raise NotImplementedError("BucketedNPU: README.md, 'Buckets'")

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("BucketedNPU.__call__: README.md, 'Buckets'")


if __name__ == "__main__":  # python katas/06_recompiles/recompiles.py: your predictions beside Dynamo's
    import sys
    import warnings
    from pathlib import Path

    import torch._dynamo

    sys.path.insert(0, str(Path(__file__).parent))
    import suspects

    warnings.simplefilter("ignore")
    calls = [Call((2, 4)), Call((3, 4)), Call((3, 5)), Call((1, 5)), Call((3, 5), n=2), Call((3, 5), dtype="float16")]
    for dynamic in (False, None, True):
        torch._dynamo.reset()
        graphs: list[torch.fx.GraphModule] = []
        compiled = torch.compile(suspects.scaled_relu, backend=lambda gm, _: graphs.append(gm) or gm, dynamic=dynamic)
        try:
            mine = [f"{o.kind} {sorted(o.symbolic)}" if o.symbolic else o.kind for o in predict(calls, dynamic)]
        except NotImplementedError:
            mine = ["(predict not written yet)"] * len(calls)
        print(f"dynamic={dynamic}")
        for call, guess in zip(calls, mine):
            before = len(graphs)
            compiled(torch.randn(*call.shape, dtype=getattr(torch, call.dtype)), call.n)
            inputs = [f"{node.name}={getattr(node.meta.get('example_value'), 'shape', node.meta.get('example_value'))}"
                      for node in graphs[-1].graph.nodes if node.op == "placeholder"] if len(graphs) > before else []
            real = f"new graph, inputs {', '.join(inputs)}" if inputs else "no new graph (or ran eagerly)"
            print(f"  {call}\n    you:    {guess}\n    Dynamo: {real}")
