"""Mistake: the finder sets DEBUG on torch._dynamo, the parent, instead of on each graph-break logger: with
torch's defaults the graph-break loggers are NOTSET and inherit it, but a user who set WARNING on the
graph-break loggers themselves hides every report. Blind round 2: wrong_level_on_parent.py, miss C."""
import contextlib
import logging
import warnings

import torch
import torch._dynamo

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("finds_breaks_past_users_settings",)


def _find(fn, args, kwargs, messages):
    """The reference's find_graph_breaks, collecting with `messages` (a context manager yielding the list)."""
    torch._dynamo.reset()
    with messages() as found, warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=r"torch\.")
        torch.compile(fn, backend="eager")(*args, **kwargs)
    breaks, seen = [], set()
    for message in found:
        location = _ref._location(message)
        if location is None or location in seen:
            continue
        seen.add(location)
        breaks.append(GraphBreak(location[0], location[1], _ref._cause(message)))
    return breaks


@contextlib.contextmanager
def _messages():
    collector, drop = _ref._MessageCollector(), _ref._DropAll()
    keep = _ref._Keep(collector)
    loggers = _ref._graph_break_loggers()
    parent = logging.getLogger("torch._dynamo")
    hint_loggers = [logging.getLogger(name) for name in _ref._HINT_LOGGERS]
    saved = [(logger, logger.disabled) for logger in loggers]
    parent_level = parent.level
    try:
        parent.setLevel(logging.DEBUG)
        for logger in loggers:
            logger.disabled = False
            logger.filters.insert(0, keep)
        for logger in hint_loggers:
            logger.addFilter(drop)
        yield collector.messages
    finally:
        parent.setLevel(parent_level)
        for logger, disabled in saved:
            logger.removeFilter(keep)
            logger.disabled = disabled
        for logger in hint_loggers:
            logger.removeFilter(drop)


def find_graph_breaks(fn, *args, **kwargs):
    return _find(fn, args, kwargs, _messages)
