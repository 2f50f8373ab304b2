"""Kata 2 — graph-break hunting. This is the only file you edit for this kata.

Read katas/02_graph_breaks/README.md first: it explains where Dynamo reports graph breaks and states
the exact contract of every function below. The suspects live in suspects.py (read-only).
Check your work with `make kata N=2`; ask for a hint with `make hint N=2`.
Run `python katas/02_graph_breaks/hunt.py` to print what your finder sees in every suspect.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch._dynamo


@dataclass(frozen=True)
class GraphBreak:
    filename: str  # the source file of the line that broke (the code object's co_filename, as Dynamo reports it)
    lineno: int    # line in the user's source where Dynamo broke the graph
    reason: str    # Dynamo's reason, first line: the cause (e.g. "Data-dependent branching"), not a wrapper


def find_graph_breaks(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[GraphBreak]:
    """Every graph break Dynamo makes while running `fn(*args, **kwargs)` under torch.compile.

    - Reset Dynamo first (torch._dynamo.reset()), so code compiled earlier cannot hide a break.
    - Run `fn` once, compiled with backend="eager", with every positional and keyword argument; `fn` may be
      a function or an nn.Module.
    - Include the breaks torch._dynamo.explain misses: a break before any op, a frame that falls back
      to eager entirely.
    - One GraphBreak per location (filename, lineno), in the order Dynamo first reports it; a location
      reported again is not listed again, but the same line number in two files is two breaks.
    - Leave logging exactly as you found it (levels, propagate, handlers, filters), also when `fn` raises:
      put back what you changed in a `finally:`; torch._logging.set_logs would reset the user's settings.

    See README.md, "Your finder".
    """
    raise NotImplementedError("find_graph_breaks: collect Dynamo's graph-break reports — README.md, 'Your finder'")


# --- fixes: the same inputs and outputs as the suspect of the same name in suspects.py, but
# --- torch.compile(fixed_..., fullgraph=True) captures all of it in ONE graph. README.md, "Your fixes".

def fixed_scale_by_peak(x: torch.Tensor) -> torch.Tensor:
    """suspects.scale_by_peak, captured in one graph."""
    raise NotImplementedError("fixed_scale_by_peak: rewrite suspects.scale_by_peak — README.md, 'Your fixes'")


def fixed_chatty_mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """suspects.chatty_mlp, captured in one graph."""
    raise NotImplementedError("fixed_chatty_mlp: rewrite suspects.chatty_mlp — README.md, 'Your fixes'")


def fixed_clamp_norm(x: torch.Tensor) -> torch.Tensor:
    """suspects.clamp_norm, captured in one graph, right for inputs on both sides of norm 1."""
    raise NotImplementedError("fixed_clamp_norm: rewrite suspects.clamp_norm — README.md, 'Your fixes'")


def fixed_horner(x: torch.Tensor, coeffs: torch.Tensor) -> torch.Tensor:
    """suspects.horner, captured in one graph."""
    raise NotImplementedError("fixed_horner: rewrite suspects.horner — README.md, 'Your fixes'")


def fixed_standardize(x: torch.Tensor) -> torch.Tensor:
    """suspects.standardize, captured in one graph."""
    raise NotImplementedError("fixed_standardize: rewrite suspects.standardize — README.md, 'Your fixes'")


def fixed_residual_tanh(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """suspects.residual_tanh, captured in one graph."""
    raise NotImplementedError("fixed_residual_tanh: rewrite suspects.residual_tanh — README.md, 'Your fixes'")


def fixed_positive_mean(x: torch.Tensor) -> torch.Tensor:
    """suspects.positive_mean, captured in one graph (nan when x has no positive element, as the suspect)."""
    raise NotImplementedError("fixed_positive_mean: rewrite suspects.positive_mean — README.md, 'Your fixes'")


def fixed_count_above(x: torch.Tensor, thresholds: torch.Tensor) -> torch.Tensor:
    """suspects.count_above, captured in one graph (an int64 tensor with one count per threshold)."""
    raise NotImplementedError("fixed_count_above: rewrite suspects.count_above — README.md, 'Your fixes'")


if __name__ == "__main__":  # python katas/02_graph_breaks/hunt.py: what your finder sees in every suspect
    import suspects

    for name in suspects.SUSPECTS:
        found = find_graph_breaks(getattr(suspects, name), *suspects.example_inputs(name))
        print(f"{name}: {len(found)} break(s)")
        for brk in found:
            print(f"    line {brk.lineno}: {brk.reason}")
