"""Kata 2's suspects: eight small functions that torch.compile cannot capture as one graph.

GIVEN FILE, READ-ONLY. Do not edit it: `hunt.py` imports it, and the checks compare your `fixed_*`
functions with these originals (same inputs, same outputs). Hunt their graph breaks with your
`find_graph_breaks`, then write the fixes in `hunt.py`.

Each function is code someone could really have written; each breaks the graph for its own reason.
`example_inputs(name)` gives inputs to call a suspect with.
"""
from __future__ import annotations

import logging
import warnings

import torch

logger = logging.getLogger("fx_katas.suspects")


def scale_by_peak(x: torch.Tensor) -> torch.Tensor:
    """x divided by its largest magnitude (plus 1e-6, so all-zero input stays finite)."""
    peak = x.abs().max().item()
    return x / (peak + 1e-6)


def chatty_mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """relu(x @ w1) @ w2, instrumented with prints during a debugging session."""
    print(f"chatty_mlp: input of shape {tuple(x.shape)}")
    hidden = torch.relu(x @ w1)
    print("chatty_mlp: mean hidden activation", hidden.mean())
    return hidden @ w2


def clamp_norm(x: torch.Tensor) -> torch.Tensor:
    """x rescaled to norm 1 if its norm is above 1, otherwise x unchanged."""
    norm = x.norm()
    if norm > 1.0:
        x = x / norm
    return x


def horner(x: torch.Tensor, coeffs: torch.Tensor) -> torch.Tensor:
    """The polynomial with coefficients `coeffs` (highest power first), evaluated at every element of x."""
    result = torch.zeros_like(x)
    for c in coeffs.tolist():
        result = result * x + c
    return result


def standardize(x: torch.Tensor) -> torch.Tensor:
    """(x - mean) / (std + 1e-5), with a log line and a deprecation warning."""
    logger.debug("standardize: %d values", x.numel())
    mean, std = x.mean(), x.std()
    warnings.warn("standardize() is deprecated, use torch.nn.functional.layer_norm", DeprecationWarning)
    return (x - mean) / (std + 1e-5)


def residual_tanh(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """x + tanh(x @ w); someone left a graph break in while bisecting a bug."""
    update = torch.tanh(x @ w)
    torch._dynamo.graph_break()
    return x + update


def positive_mean(x: torch.Tensor) -> torch.Tensor:
    """The mean of x's positive elements (nan when there are none)."""
    positives = x[x > 0]
    return positives.sum() / positives.numel()


def count_above(x: torch.Tensor, thresholds: torch.Tensor) -> torch.Tensor:
    """For each threshold t (at least one), how many elements of x are greater than t (int64)."""
    counts = []
    for t in thresholds:
        counts.append(int((x > t).sum().item()))
    return torch.tensor(counts)


SUSPECTS = ("scale_by_peak", "chatty_mlp", "clamp_norm", "horner", "standardize", "residual_tanh",
            "positive_mean", "count_above")


def example_inputs(name: str, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """Arguments to call suspect `name` with (fixed for a given seed)."""
    g = torch.Generator().manual_seed(seed)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g)

    inputs = {
        "scale_by_peak": lambda: (randn(4, 5),),
        "chatty_mlp": lambda: (randn(2, 3), randn(3, 4), randn(4, 2)),
        "clamp_norm": lambda: (randn(6),),
        "horner": lambda: (randn(5), randn(4)),
        "standardize": lambda: (randn(3, 4),),
        "residual_tanh": lambda: (randn(2, 3), randn(3, 3)),
        "positive_mean": lambda: (randn(7),),
        "count_above": lambda: (randn(6), randn(3)),
    }
    return inputs[name]()
