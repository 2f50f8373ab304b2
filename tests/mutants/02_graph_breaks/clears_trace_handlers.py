"""Mistake: the finder collects from torch's structured trace logger `torch.__trace` and, on the way out, empties
that logger's handler list ("drop the collector and anything it dragged in") instead of removing only its own
handler. In a default process the list is empty by then (torch's lazy trace handler removed itself), so nothing
shows; a user running under TORCH_TRACE, or with a handler of their own there, loses it. (Blind round 1:
wrong_clear_trace_handlers.py.)"""
import logging
import warnings

import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("finds_breaks_past_users_settings", "keeps_users_logging_settings")


class _Artifacts(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.payloads = []

    def emit(self, record):
        meta = getattr(record, "metadata", {}) or {}
        if (meta.get("artifact") or {}).get("name") == "dynamo_graph_break_reason":
            self.payloads.append(getattr(record, "payload", "") or "")


def find_graph_breaks(fn, *args, **kwargs):
    trace_log = logging.getLogger("torch.__trace")
    level = trace_log.level
    collector = _Artifacts()
    trace_log.addHandler(collector)
    trace_log.setLevel(logging.DEBUG)
    try:
        torch._dynamo.reset()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"torch\.")
            torch.compile(fn, backend="eager")(*args, **kwargs)
    finally:
        for handler in list(trace_log.handlers):
            trace_log.removeHandler(handler)
        trace_log.setLevel(level)
    breaks, seen = [], set()
    for payload in collector.payloads:
        location = _ref._location(payload)
        if location and location not in seen:
            seen.add(location)
            breaks.append(GraphBreak(location[0], location[1], _ref._cause(payload)))
    return breaks
