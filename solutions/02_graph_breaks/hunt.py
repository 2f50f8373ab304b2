"""Reference solution for kata 2: find every graph break Dynamo makes, then rewrite the suspects so
torch.compile captures each one as a single graph."""
from __future__ import annotations

import contextlib
import logging
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch
import torch._dynamo


@dataclass(frozen=True)
class GraphBreak:
    filename: str
    lineno: int  # line in the user's source where Dynamo broke the graph
    reason: str  # Dynamo's reason, first line (the cause, not the wrapper around it)


# --- finding breaks ------------------------------------------------------------------------------------
#
# Dynamo reports every graph break it handles on the `graph_breaks` logging artifact (what
# TORCH_LOGS=graph_breaks switches on): one debug record per break, on loggers named
# `torch._dynamo.<module>.__graph_breaks`. It writes the record whether the break splits the graph or
# makes the whole frame fall back to eager, and whether or not a graph came before it -- the cases
# `torch._dynamo.explain` cannot see, because it only reads the graphs that were compiled.

GRAPH_BREAK_LOGGER_SUFFIX = ".__graph_breaks"
# "Graph break in user code at FILE:LINE", or for a repeat within one torch.compile call "Graph break
# (user stack suppressed due to duplicate graph break) in user code at FILE:LINE".
_LOCATION = re.compile(r"in user code at (?P<filename>.+):(?P<lineno>\d+)\s*$", re.MULTILINE)
# torch/_dynamo/convert_frame.py has a third form, for an unsupported construct that escapes tracing without
# being reported ("Graph break: torch.compile cannot properly resume from this graph break, which results in a
# skip."): it names the location only as traceback lines. No suspect here produces it on torch 2.13 with the
# eager backend (breaks in loops and `with` blocks are reported with the header above); it is read anyway.
_TRACEBACK_LINE = re.compile(r'File "(?P<filename>[^"]+)", line (?P<lineno>\d+)')
_REASON_HEADER = "Graph Break Reason:"
# What else torch prints while a function is compiled, outside the graph_breaks artifact: the hint after the
# first `.item()` break of a process ("Graph break from `Tensor.item()`, consider setting ...") is a WARNING of
# this module's logger, which torch's own handler writes to stderr.
_HINT_LOGGERS = ("torch._dynamo.variables.tensor",)


class _MessageCollector(logging.Handler):
    """Keeps each record's message (and the text of the exception logged with it, if any)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            message += f"\n{_REASON_HEADER} {record.exc_info[1]}"
        self.messages.append(message)


class _Keep(logging.Filter):
    """A logger filter that keeps each record's message and returns False (the record goes no further). Put
    first on a logger, it sees every record the logger is asked to log, before any filter of the user's can
    drop it; returning False keeps the reports off torch's stderr handler and off the user's handlers."""

    def __init__(self, collector: _MessageCollector) -> None:
        super().__init__()
        self.collector = collector

    def filter(self, record: logging.LogRecord) -> bool:
        self.collector.emit(record)
        return False


class _DropAll(logging.Filter):
    """A logger filter that lets nothing through: on a logger, it silences what that logger itself logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        return False


def _graph_break_loggers() -> list[logging.Logger]:
    """Dynamo's `graph_breaks` artifact loggers (they exist once torch._dynamo is imported)."""
    names = [name for name in list(logging.root.manager.loggerDict) if name.endswith(GRAPH_BREAK_LOGGER_SUFFIX)]
    return [logging.getLogger(name) for name in names]


@contextlib.contextmanager
def _graph_break_messages() -> Iterator[list[str]]:
    """Switch the graph_breaks loggers on for the duration, into a list instead of stderr.

    The user's settings must not hide a report: each graph-break logger gets level DEBUG, `disabled` False and
    the collecting filter first in its list. Only what is changed here is put back, exactly as it was, in a
    `finally:`: each graph-break logger's level and disabled flag, the collecting filter, the filter on the hint
    loggers. Nothing goes through torch._logging.set_logs, which would reset every other setting (a user's
    `recompiles` logging, say) and replace torch's own handlers. The collecting filter returns False, which
    keeps the reports away from torch's stderr handler; the drop filter keeps torch's `.item()` hint off
    stderr.
    """
    collector, drop = _MessageCollector(), _DropAll()
    keep = _Keep(collector)
    loggers = _graph_break_loggers()
    hint_loggers = [logging.getLogger(name) for name in _HINT_LOGGERS]
    saved = [(logger, logger.level, logger.disabled) for logger in loggers]
    try:
        for logger in loggers:
            # Past whatever the user set: a level above DEBUG, a disabled logger, a filter of theirs that drops
            # records (a logger runs its filters in order, before any handler: ours goes first).
            logger.setLevel(logging.DEBUG)
            logger.disabled = False
            logger.filters.insert(0, keep)
        for logger in hint_loggers:
            logger.addFilter(drop)
        yield collector.messages
    finally:
        for logger, level, disabled in saved:
            logger.removeFilter(keep)
            logger.setLevel(level)
            logger.disabled = disabled
        for logger in hint_loggers:
            logger.removeFilter(drop)


def _location(message: str) -> tuple[str, int] | None:
    """(filename, line) a graph-break message points at: the innermost user frame."""
    found = _LOCATION.search(message)
    if found is None:
        frames = list(_TRACEBACK_LINE.finditer(message))
        found = frames[-1] if frames else None
    return (found["filename"], int(found["lineno"])) if found else None


def _cause(message: str) -> str:
    """The first line of the break's cause.

    Dynamo often wraps the cause in a sentence about how it handled it ("Encountered graph break when
    attempting to trace CALL ...:", "Failed to handle graph break gracefully. ... Graph break
    encountered:"); such a wrapper is a paragraph of one line ending in a colon, so skip those.
    """
    text = message.split(_REASON_HEADER, 1)[1] if _REASON_HEADER in message else message
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    for paragraph in paragraphs:
        first_line = paragraph.splitlines()[0].strip()
        if not (first_line.endswith(":") and len(paragraph.splitlines()) == 1):
            return first_line
    return paragraphs[0].splitlines()[0].strip() if paragraphs else ""


def find_graph_breaks(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[GraphBreak]:
    """Every graph break Dynamo makes while running `fn(*args, **kwargs)` under torch.compile.

    One GraphBreak per source line that breaks -- a (filename, lineno) pair: two files can break on the same
    line number -- in the order Dynamo first reports it (execution order); a line reported again (a helper
    called twice, a resumed frame that falls back) is listed once. Resets Dynamo first so nothing compiled
    earlier hides a break. `fn` may be a function or an nn.Module; it runs once, for real, with the eager
    backend (breaks are Dynamo's doing, whatever the backend), with every positional and keyword argument.
    Torch's logging is left exactly as it was, also when fn raises (its exception propagates).
    """
    torch._dynamo.reset()
    with _graph_break_messages() as messages, warnings.catch_warnings():
        # Dynamo warns once per process about a builtin it cannot trace (random.random, say); those warnings
        # come from torch's own modules. fn's own warnings still show: it runs for real.
        warnings.filterwarnings("ignore", module=r"torch\.")
        torch.compile(fn, backend="eager")(*args, **kwargs)
    breaks: list[GraphBreak] = []
    seen: set[tuple[str, int]] = set()
    for message in messages:
        location = _location(message)
        if location is None or location in seen:
            continue
        seen.add(location)
        breaks.append(GraphBreak(location[0], location[1], _cause(message)))
    return breaks


# --- the fixes: same inputs and outputs as the suspects, one graph each ----------------------------------

def fixed_scale_by_peak(x: torch.Tensor) -> torch.Tensor:
    """suspects.scale_by_peak without `.item()`: the peak stays a 0-d tensor inside the graph."""
    return x / (x.abs().max() + 1e-6)


def fixed_chatty_mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """suspects.chatty_mlp without the prints (print is a side effect Dynamo cannot put in a graph)."""
    return torch.relu(x @ w1) @ w2


def fixed_clamp_norm(x: torch.Tensor) -> torch.Tensor:
    """suspects.clamp_norm without the Python `if`: dividing by max(norm, 1) is x / norm above 1 and
    x / 1 == x otherwise, for every input, so there is nothing left to branch on."""
    return x / torch.clamp(x.norm(), min=1.0)


def fixed_horner(x: torch.Tensor, coeffs: torch.Tensor) -> torch.Tensor:
    """suspects.horner iterating over the coefficient tensor itself: its length is part of the input's
    shape, which Dynamo knows, so the loop unrolls into the graph; only `.tolist()` left it."""
    result = torch.zeros_like(x)
    for c in coeffs.unbind(0):
        result = result * x + c
    return result


def fixed_standardize(x: torch.Tensor) -> torch.Tensor:
    """suspects.standardize without the log call and the warning (both calls Dynamo skips)."""
    return (x - x.mean()) / (x.std() + 1e-5)


def fixed_residual_tanh(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """suspects.residual_tanh without the leftover torch._dynamo.graph_break()."""
    return x + torch.tanh(x @ w)


def fixed_positive_mean(x: torch.Tensor) -> torch.Tensor:
    """suspects.positive_mean without boolean indexing, whose output size depends on the data: zero the
    non-positive elements instead and count the positives (0 / 0 is nan, as in the suspect)."""
    positive = x > 0
    return torch.where(positive, x, 0).sum() / positive.sum()


def fixed_count_above(x: torch.Tensor, thresholds: torch.Tensor) -> torch.Tensor:
    """suspects.count_above as one broadcast comparison: row i compares every element of x with
    thresholds[i]; summing a row counts the hits, as an int64 tensor, never as Python ints."""
    return (x.reshape(1, -1) > thresholds.reshape(-1, 1)).sum(dim=1)


if __name__ == "__main__":  # python solutions/02_graph_breaks/hunt.py: the breaks in every suspect
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "katas" / "02_graph_breaks"))
    import suspects

    for name in suspects.SUSPECTS:
        found = find_graph_breaks(getattr(suspects, name), *suspects.example_inputs(name))
        print(f"{name}: {len(found)} break(s)")
        for brk in found:
            print(f"    line {brk.lineno}: {brk.reason}")
