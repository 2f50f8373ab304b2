"""Alternative correct attempt (blind round 1, correct_filter.py): a logging.Filter on each graph-break logger
that keeps each record and returns False, put first among the logger's filters; it remembers and restores only level and disabled, and never touches
propagate or handlers. Fixes: torch.where for clamp_norm, clamp-and-count for positive_mean, the others as
trace_logger_and_other_fixes.py."""
from __future__ import annotations

import logging
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch._dynamo


@dataclass(frozen=True)
class GraphBreak:
    filename: str  # the source file of the line that broke (the code object's co_filename, as Dynamo reports it)
    lineno: int    # line in the user's source where Dynamo broke the graph
    reason: str    # Dynamo's reason, first line: the cause (e.g. "Data-dependent branching"), not a wrapper


_HEADER = re.compile(r"in user code at (.+):(\d+)\s*$", re.MULTILINE)


class _Keep(logging.Filter):
    """Sits on each graph-break logger: keeps every record's message and returns False, so no handler
    (torch's stderr handler or the user's) sees it while we collect."""

    def __init__(self, sink: list[str]) -> None:
        super().__init__()
        self.sink = sink

    def filter(self, record: logging.LogRecord) -> bool:
        self.sink.append(record.getMessage())
        return False


class _DropAll(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


def _cause(reason_text: str) -> str:
    """First line of the first paragraph that is not a one-line wrapper ending in ':'."""
    paragraphs = [p.strip("\n") for p in re.split(r"\n\s*\n", reason_text)]
    paragraphs = [p for p in paragraphs if p.strip()]
    for para in paragraphs:
        lines = para.splitlines()
        if len(lines) == 1 and lines[0].rstrip().endswith(":"):
            continue
        return lines[0].strip()
    return paragraphs[0].splitlines()[0].strip() if paragraphs else ""


def _parse(message: str) -> GraphBreak | None:
    header = _HEADER.search(message)
    marker = "Graph Break Reason:"
    start = message.find(marker)
    if header is None or start < 0:
        return None
    body = message[start + len(marker):]
    end = body.find("User code traceback:")
    if end >= 0:
        body = body[:end]
    return GraphBreak(header.group(1), int(header.group(2)), _cause(body.lstrip(" ")))


def _graph_break_loggers() -> list[logging.Logger]:
    import torch._dynamo.convert_frame  # noqa: F401  (make sure every graph-break logger exists)
    import torch._dynamo.symbolic_convert  # noqa: F401
    names = [n for n in list(logging.root.manager.loggerDict) if n.endswith(".__graph_breaks")]
    return [logging.getLogger(n) for n in sorted(names)]


def find_graph_breaks(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[GraphBreak]:
    messages: list[str] = []
    keep = _Keep(messages)
    hush = _DropAll()
    tensor_log = logging.getLogger("torch._dynamo.variables.tensor")
    loggers = _graph_break_loggers()
    saved = [(log, log.level, log.disabled) for log in loggers]
    try:
        for log in loggers:
            log.filters.insert(0, keep)  # first: a user's filter that drops records must not run before it
            log.setLevel(logging.DEBUG)
            log.disabled = False
        tensor_log.addFilter(hush)
        torch._dynamo.reset()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"torch\.")
            torch.compile(fn, backend="eager")(*args, **kwargs)
    finally:
        tensor_log.removeFilter(hush)
        for log, level, disabled in saved:
            log.removeFilter(keep)
            log.setLevel(level)
            log.disabled = disabled

    found: list[GraphBreak] = []
    seen: set[tuple[str, int]] = set()
    for message in messages:
        brk = _parse(message)
        if brk is None or (brk.filename, brk.lineno) in seen:
            continue
        seen.add((brk.filename, brk.lineno))
        found.append(brk)
    return found


# --- fixes ---------------------------------------------------------------------------------------

def fixed_scale_by_peak(x: torch.Tensor) -> torch.Tensor:
    peak = torch.linalg.vector_norm(x, ord=float("inf"))
    return x / (peak + 1e-6)


def fixed_chatty_mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return torch.matmul(torch.nn.functional.relu(torch.matmul(x, w1)), w2)


def _divide(x: torch.Tensor, norm: torch.Tensor) -> torch.Tensor:
    return x / norm


def _keep(x: torch.Tensor, norm: torch.Tensor) -> torch.Tensor:
    return x.clone()


def fixed_clamp_norm(x: torch.Tensor) -> torch.Tensor:
    norm = x.norm()
    return torch.where(norm > 1.0, x / norm, x)


def fixed_horner(x: torch.Tensor, coeffs: torch.Tensor) -> torch.Tensor:
    result = torch.zeros_like(x)
    for i in range(coeffs.shape[0]):
        result = result * x + coeffs[i]
    return result


def fixed_standardize(x: torch.Tensor) -> torch.Tensor:
    std, mean = torch.std_mean(x)
    return (x - mean) / (std + 1e-5)


def fixed_residual_tanh(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x + torch.tanh(x @ w)


def fixed_positive_mean(x: torch.Tensor) -> torch.Tensor:
    positive = x > 0
    return x.clamp(min=0).sum() / positive.sum()


def fixed_count_above(x: torch.Tensor, thresholds: torch.Tensor) -> torch.Tensor:
    ordered = torch.sort(x.reshape(-1)).values
    at_or_below = torch.searchsorted(ordered, thresholds, right=True)
    return ordered.shape[0] - at_or_below


if __name__ == "__main__":
    import sys
    sys.path.insert(0, "katas/02_graph_breaks")
    import suspects

    for name in suspects.SUSPECTS:
        found = find_graph_breaks(getattr(suspects, name), *suspects.example_inputs(name))
        print(f"{name}: {len(found)} break(s)")
        for brk in found:
            print(f"    line {brk.lineno}: {brk.reason}")
