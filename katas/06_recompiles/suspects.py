"""Kata 6's suspects (read-only): the function whose compiles you predict, and three models that recompile
far more than they need to. `make kata N=6` compiles each with torch.compile and counts the graphs.

Run `TORCH_LOGS=recompiles python katas/06_recompiles/suspects.py` to watch Dynamo recompile them, with the
guard that failed each time.
"""
from __future__ import annotations

import torch
import torch.nn as nn


def scaled_relu(x: torch.Tensor, n: int) -> torch.Tensor:
    """The function of "Predict": one tensor and one Python int."""
    return torch.relu(x) * n


class DecayingHead(nn.Module):
    """A projection whose output decays with every call (a warm-up schedule): call k returns proj(x) * rate**k.
    The call counter is a Python int attribute, and Dynamo guards on its value."""

    def __init__(self, features: int = 4, rate: float = 0.9) -> None:
        super().__init__()
        self.proj = nn.Linear(features, features)
        self.rate = rate
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.proj(x) * self.rate ** self.calls


class RunningMean(nn.Module):
    """The mean of every input seen so far, kept as a Python list that grows by one tensor per call.
    Dynamo guards on the list's length."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(x)
        return torch.stack(self.seen).mean(0)


def rowwise_normalize(x: torch.Tensor) -> torch.Tensor:
    """Each row of a (batch, features) tensor divided by its own norm (at least 1e-6), a row at a time.
    The Python loop runs x.shape[0] times, so every batch size traces a different graph."""
    rows = [x[i] / x[i].norm().clamp_min(1e-6) for i in range(x.shape[0])]
    return torch.stack(rows)


if __name__ == "__main__":  # TORCH_LOGS=recompiles python katas/06_recompiles/suspects.py
    torch.compile(scaled_relu)(torch.randn(2, 4), 1)
    compiled = torch.compile(scaled_relu)
    for batch, n in ((2, 1), (3, 1), (3, 2), (1, 2)):
        compiled(torch.randn(batch, 4), n)
    head = torch.compile(DecayingHead())
    for _ in range(3):
        head(torch.randn(2, 4))
    normalize = torch.compile(rowwise_normalize)
    for batch in (2, 3, 4):
        normalize(torch.randn(batch, 4))
