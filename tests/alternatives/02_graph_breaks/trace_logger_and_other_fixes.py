"""Alternative correct attempt (blind round 1, correct_trace.py): a collector on torch's structured trace logger
`torch.__trace` (first in its filters, level DEBUG and enabled while it collects, a NullHandler so torch emits)
keeping the `dynamo_graph_break_reason` artifacts; fixes by other roads: torch.cond for clamp_norm,
an inf-norm for scale_by_peak, std_mean, nanmean over a where-mask for positive_mean, sort + searchsorted over every
element for count_above, an index loop for horner."""
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


_TRACE_LOGGER = "torch.__trace"
_HEADER = re.compile(r"in user code at (.+):(\d+)\s*$", re.MULTILINE)


class _TraceCollector(logging.Handler):
    """Keeps the payload of every `dynamo_graph_break_reason` artifact of the structured trace."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.payloads: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return
        artifact = metadata.get("artifact")
        if isinstance(artifact, dict) and artifact.get("name") == "dynamo_graph_break_reason":
            payload = getattr(record, "payload", None)
            if isinstance(payload, str):
                self.payloads.append(payload)


class _FeedFirst(logging.Filter):
    """Put first on torch.__trace: hands every record to the collector before any filter of the user's can drop
    it, and lets it through."""

    def __init__(self, collector: _TraceCollector) -> None:
        super().__init__()
        self.collector = collector

    def filter(self, record: logging.LogRecord) -> bool:
        self.collector.emit(record)
        return True


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


def _parse(payload: str) -> GraphBreak | None:
    header = _HEADER.search(payload)
    if header is None:
        return None
    marker = "Graph Break Reason:"
    start = payload.find(marker)
    if start < 0:
        return None
    body = payload[start + len(marker):]
    end = body.find("User code traceback:")
    if end >= 0:
        body = body[:end]
    return GraphBreak(header.group(1), int(header.group(2)), _cause(body.lstrip(" ")))


def find_graph_breaks(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[GraphBreak]:
    trace_log = logging.getLogger(_TRACE_LOGGER)
    tensor_log = logging.getLogger("torch._dynamo.variables.tensor")
    collector = _TraceCollector()
    first = _FeedFirst(collector)
    sink = logging.NullHandler()  # torch builds trace records only when torch.__trace has a handler
    hush = _DropAll()
    old_trace_level, old_disabled = trace_log.level, trace_log.disabled
    trace_log.filters.insert(0, first)  # before any filter of the user's that drops records
    trace_log.addHandler(sink)
    tensor_log.addFilter(hush)
    try:
        trace_log.setLevel(logging.DEBUG)
        trace_log.disabled = False
        torch._dynamo.reset()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"torch\.")
            torch.compile(fn, backend="eager")(*args, **kwargs)
    finally:
        trace_log.removeFilter(first)
        trace_log.removeHandler(sink)
        tensor_log.removeFilter(hush)
        trace_log.setLevel(old_trace_level)
        trace_log.disabled = old_disabled

    found: list[GraphBreak] = []
    seen: set[tuple[str, int]] = set()
    for payload in collector.payloads:
        brk = _parse(payload)
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
    return torch.cond(norm > 1.0, _divide, _keep, (x, norm))


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
    return torch.nanmean(torch.where(x > 0, x, torch.nan))


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
