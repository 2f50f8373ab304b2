"""Mistake: the finder collects on torch's structured trace, `torch.__trace`, gets past the user's settings there
(level DEBUG, `disabled` False, a collecting filter first, a NullHandler of its own), but remembers the logger's
level as `getEffectiveLevel()` and puts that back. For a logger at NOTSET that is its parent's level: a user who set
torch.__trace to NOTSET finds it at WARNING (30) afterwards. Blind round 4: wrong_effective_level.py.
Lesson: rule 6, "A level is `logger.level`, `NOTSET` (0) included, not `getEffectiveLevel()`"."""
import logging
import warnings

import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("keeps_users_logging_settings",)


class _TraceCollector(logging.Filter):
    def __init__(self):
        super().__init__()
        self.reports = []

    def filter(self, record):
        meta = getattr(record, "metadata", None)
        artifact = meta.get("artifact") if isinstance(meta, dict) else None
        if isinstance(artifact, dict) and artifact.get("name") == "dynamo_graph_break_reason":
            self.reports.append(getattr(record, "payload", "") or "")
        return False


def _remember_level(logger):
    return logger.getEffectiveLevel()  # the mistake: `logger.level` is what the user set


def find_graph_breaks(fn, *args, **kwargs):
    trace = logging.getLogger("torch.__trace")
    hint = logging.getLogger("torch._dynamo.variables.tensor")
    collector, sink, hush = _TraceCollector(), logging.NullHandler(), _ref._DropAll()
    level, disabled = _remember_level(trace), trace.disabled
    trace.setLevel(logging.DEBUG)
    trace.disabled = False
    trace.filters.insert(0, collector)
    trace.addHandler(sink)
    hint.addFilter(hush)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"torch\.")
            torch._dynamo.reset()
            torch.compile(fn, backend="eager")(*args, **kwargs)
    finally:
        trace.removeFilter(collector)
        _remove_own_handler(trace, sink)
        trace.setLevel(level)
        trace.disabled = disabled
        hint.removeFilter(hush)
    breaks, seen = [], set()
    for report in collector.reports:
        location = _ref._location(report)
        if location is None or location in seen:
            continue
        seen.add(location)
        breaks.append(GraphBreak(location[0], location[1], _ref._cause(report)))
    return breaks


def _remove_own_handler(logger, handler):
    logger.removeHandler(handler)
