"""Alternative correct attempt (blind round 2, correct_filter_collector.py): a logging.Filter inserted first on each
graph-break logger keeps each record and returns False (no handler, no propagate flag touched); clears
`disabled`, sets DEBUG, restores both; reasons parsed line by line. Fixes by less common tools:
vector_norm(ord=inf), F.linear, torch.cond, functools.reduce over unbind, std_mean, nanmean,
sort + searchsorted(right=True)."""
from __future__ import annotations

import functools
import logging
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch._dynamo
import torch.nn.functional as F


@dataclass(frozen=True)
class GraphBreak:
    filename: str
    lineno: int
    reason: str


_HEADER = re.compile(r"in user code at (.+):(\d+)[ \t]*$", re.MULTILINE)


class _Keep(logging.Filter):
    """Keeps every record's message and swallows the record (returns False)."""

    def __init__(self, sink: list[str] | None) -> None:
        super().__init__()
        self.sink = sink

    def filter(self, record: logging.LogRecord) -> bool:
        if self.sink is not None:
            self.sink.append(record.getMessage())
        return False


def _cause(message: str) -> str:
    marker = "Graph Break Reason:"
    start = message.find(marker)
    if start < 0:
        return ""
    lines = message[start + len(marker):].split("\n")
    lines[0] = lines[0].strip()
    # walk paragraph by paragraph
    para: list[str] = []
    paragraphs: list[list[str]] = []
    for line in lines:
        if line.strip() == "":
            if para:
                paragraphs.append(para)
                para = []
        else:
            para.append(line)
    if para:
        paragraphs.append(para)
    for p in paragraphs:
        if len(p) == 1 and p[0].rstrip().endswith(":"):
            continue  # a wrapper sentence
        return p[0].strip()
    return ""


def _graph_break_loggers() -> list[logging.Logger]:
    names = [n for n, lg in list(logging.root.manager.loggerDict.items())
             if n.endswith(".__graph_breaks") and isinstance(lg, logging.Logger)]
    return [logging.getLogger(n) for n in names]


def find_graph_breaks(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[GraphBreak]:
    messages: list[str] = []
    keep = _Keep(messages)
    hush = _Keep(None)
    tensor_log = logging.getLogger("torch._dynamo.variables.tensor")
    touched: list[tuple[logging.Logger, int, bool]] = []
    try:
        for lg in _graph_break_loggers():
            touched.append((lg, lg.level, lg.disabled))
            lg.filters.insert(0, keep)
            lg.disabled = False
            lg.setLevel(logging.DEBUG)
        tensor_log.addFilter(hush)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"torch\.")
            torch._dynamo.reset()
            compiled = torch.compile(fn, backend="eager")
            compiled(*args, **kwargs)
    finally:
        tensor_log.removeFilter(hush)
        for lg, level, disabled in reversed(touched):
            lg.removeFilter(keep)
            lg.setLevel(level)
            lg.disabled = disabled

    found: list[GraphBreak] = []
    seen: set[tuple[str, int]] = set()
    for message in messages:
        head = _HEADER.search(message)
        if head is None:
            continue
        where = (head.group(1), int(head.group(2)))
        if where in seen:
            continue
        seen.add(where)
        found.append(GraphBreak(where[0], where[1], _cause(message)))
    return found


# --- fixes ---

def fixed_scale_by_peak(x: torch.Tensor) -> torch.Tensor:
    peak = torch.linalg.vector_norm(x, ord=float("inf"))
    return x / (peak + 1e-6)


def fixed_chatty_mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return F.linear(F.relu(F.linear(x, w1.t())), w2.t())


def _divide(x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    return x / n


def _keep(x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    return x.clone()


def fixed_clamp_norm(x: torch.Tensor) -> torch.Tensor:
    norm = x.norm()
    return torch.cond(norm > 1.0, _divide, _keep, (x, norm))


def fixed_horner(x: torch.Tensor, coeffs: torch.Tensor) -> torch.Tensor:
    return functools.reduce(lambda acc, c: acc * x + c, coeffs.unbind(0), torch.zeros_like(x))


def fixed_standardize(x: torch.Tensor) -> torch.Tensor:
    std, mean = torch.std_mean(x)
    return (x - mean) / (std + 1e-5)


def fixed_residual_tanh(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.add(x, torch.tanh(torch.matmul(x, w)))


def fixed_positive_mean(x: torch.Tensor) -> torch.Tensor:
    return torch.nanmean(torch.where(x > 0, x, float("nan")))


def fixed_count_above(x: torch.Tensor, thresholds: torch.Tensor) -> torch.Tensor:
    ordered = x.reshape(-1).sort().values
    at_or_below = torch.searchsorted(ordered, thresholds, right=True)
    return ordered.numel() - at_or_below
