"""Helpers in a module of their own, called by hidden suspects in suspects_hidden.py. Learners: do not read
this file; solve the kata from README.md.

Breaking lines carry the same `# BREAK <label>: <cause>` annotations as suspects_hidden.py, and labels are
unique across both files. `peak_scaled` breaks on the very line number at which its caller
`suspects_hidden.two_files` breaks in the other file (the checks assert that the two numbers stay equal):
a finder that tells breaks apart by line number alone, ignoring the file, merges the two.
"""
from __future__ import annotations

import torch


def _rms(t: torch.Tensor) -> torch.Tensor:
    """Root mean square of every element (a helper the suspects could call; it does not break)."""
    return t.pow(2).mean().sqrt()


def _unit_rms(t: torch.Tensor) -> torch.Tensor:
    """t rescaled to root mean square 1 (no break either)."""
    return t / (_rms(t) + 1e-6)


def _centered(t: torch.Tensor) -> torch.Tensor:
    """t minus its mean."""
    return t - t.mean()


def _softsign(t: torch.Tensor) -> torch.Tensor:
    """t / (1 + |t|)."""
    return t / (1 + t.abs())


def _clipped(t: torch.Tensor, bound: float = 3.0) -> torch.Tensor:
    """t limited to [-bound, bound]."""
    return t.clamp(-bound, bound)


def _halved(t: torch.Tensor) -> torch.Tensor:
    """Half of t."""
    return t * 0.5


def _doubled(t: torch.Tensor) -> torch.Tensor:
    """Twice t."""
    return t * 2.0


def _negated(t: torch.Tensor) -> torch.Tensor:
    """Minus t."""
    return -t


def peak_scaled(t: torch.Tensor) -> torch.Tensor:
    """t divided by its largest element.

    The peak is read as a Python number, which leaves the graph."""
    peak = t.max().item()  # BREAK helper_item: Unsupported Tensor.item() call with capture_scalar_outputs=False
    return t / peak


# Steps for suspects_hidden.chain: one break each, interleaved with the steps of suspects_hidden.py. (warnings is
# imported here, not at the top, so that peak_scaled's line number stays aligned with two_files'.)
import warnings  # noqa: E402


def step_tolist(t):
    u = t.abs()
    first = u.tolist()[0]  # BREAK step_tolist: Tensor.tolist() with non-integer tensor
    return u + first


def step_warn(t):
    u = t.tanh()
    warnings.warn("step_warn")  # BREAK step_warn: Attempted to call function marked as skipped
    return u + 2


def step_nonzero(t):
    u = t * 3
    hits = torch.nonzero(u > 0)  # BREAK step_nonzero: Dynamic shape operator
    return u + hits.numel()
