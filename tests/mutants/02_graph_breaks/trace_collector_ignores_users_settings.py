"""Mistake: the finder collects on torch's structured trace, `torch.__trace` (a first filter and a handler of its
own there), but takes that logger for torch's private one, "always DEBUG, never touched": it leaves the user's
level and `disabled` flag on it as they are. A user who set torch.__trace to INFO, or disabled it, hides every
report from this finder.
Lesson: rule 7, "what the user set must not hide a single report from you", on the logger you collect from,
torch.__trace included."""
import logging
import re
import warnings

import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("finds_breaks_past_users_settings",)

_HEADER = re.compile(r"in user code at (.+):(\d+)\s*$", re.MULTILINE)


class _TraceCollector(logging.Filter):
    def __init__(self):
        super().__init__()
        self.reports = []

    def filter(self, record):
        meta = getattr(record, "metadata", None)
        artifact = meta.get("artifact") if isinstance(meta, dict) else None
        if isinstance(artifact, dict) and artifact.get("name") == "dynamo_graph_break_reason":
            self.reports.append(getattr(record, "payload", "") or "")
        return True


def find_graph_breaks(fn, *args, **kwargs):
    trace = logging.getLogger("torch.__trace")
    hint = logging.getLogger("torch._dynamo.variables.tensor")
    collector, sink, hush = _TraceCollector(), logging.NullHandler(), _ref._DropAll()
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
        trace.removeHandler(sink)
        hint.removeFilter(hush)
    breaks, seen = [], set()
    for report in collector.reports:
        match = _HEADER.search(report)
        if match is None:
            continue
        location = (match.group(1), int(match.group(2)))
        if location in seen:
            continue
        seen.add(location)
        breaks.append(GraphBreak(location[0], location[1], _ref._cause(report)))
    return breaks
