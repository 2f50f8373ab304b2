"""Mistake: switches the graph_breaks artifact loggers to DEBUG and listens on their parent `torch._dynamo` logger
(records propagate up to it): a user's filter that drops records on a graph-break logger, or a disabled
graph-break logger, hides every report from that handler. (An alternative until blind round 2, whose misses A-C
made the lesson's rule 7: get past the user's settings while collecting.)"""
import logging
import re
from dataclasses import dataclass

import torch
import torch._dynamo

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")  # the fixes are not what this attempt varies

KILLED_BY = ("finds_breaks_past_users_settings",)
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})


@dataclass(frozen=True)
class GraphBreak:
    filename: str
    lineno: int
    reason: str


class _Listen(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        if record.name.endswith(".__graph_breaks"):
            self.messages.append(record.getMessage())


LOC = re.compile(r"in user code at (.+):(\d+)$", re.M)


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    parent = logging.getLogger("torch._dynamo")
    loggers = [logging.getLogger(n) for n in list(logging.root.manager.loggerDict) if n.endswith(".__graph_breaks")]
    saved = [(lg, lg.level, lg.propagate) for lg in loggers]
    listen = _Listen()
    parent.addHandler(listen)
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
        lg.propagate = True
    try:
        torch.compile(fn, backend="eager")(*args, **kwargs)
    finally:
        parent.removeHandler(listen)
        for lg, level, prop in saved:
            lg.setLevel(level)
            lg.propagate = prop
    out, seen = [], set()
    for m in listen.messages:
        h = LOC.search(m)
        if h and (h[1], int(h[2])) not in seen:
            seen.add((h[1], int(h[2])))
            out.append(GraphBreak(h[1], int(h[2]), _ref._cause(m)))
    return out
