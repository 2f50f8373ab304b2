"""Mistake: the finder collects reports with a logging.Filter on the graph-break loggers (it keeps each record
and lets it through; propagate=False keeps it off stderr), puts level and propagate back, but never removes the
filter: it stays on the loggers, and every later report in the process is appended to a list nobody reads."""
import logging

import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("finds_breaks_past_users_settings", "keeps_users_logging_settings", "leaves_logging_as_found",
             "restores_logging_when_fn_raises")


class _Keep(logging.Filter):
    def __init__(self):
        super().__init__()
        self.messages = []

    def filter(self, record):
        self.messages.append(record.getMessage())
        return True


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    keep = _Keep()
    saved = [(logger, logger.level, logger.propagate) for logger in _ref._graph_break_loggers()]
    for logger, _, _ in saved:
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        logger.addFilter(keep)
    try:
        torch.compile(fn, backend="eager")(*args, **kwargs)
    finally:
        for logger, level, propagate in saved:
            logger.setLevel(level)
            logger.propagate = propagate
    breaks, seen = [], set()
    for message in keep.messages:
        location = _ref._location(message)
        if location and location not in seen:
            seen.add(location)
            breaks.append(GraphBreak(location[0], location[1], _ref._cause(message)))
    return breaks
