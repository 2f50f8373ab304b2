"""Mistake: the finder puts its collecting filter into the logger's filters with `insert(-1, ...)`, before the
last one instead of first: with a single filter of the user's that is the same as first, but a user whose
dropping filter comes before another filter of theirs hides every report. (Mutation survivor
NumberReplacer@_graph_break_messages:82236db6af of the round-2 reference.)"""
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
    hint_loggers = [logging.getLogger(name) for name in _ref._HINT_LOGGERS]
    saved = [(logger, logger.level, logger.disabled) for logger in loggers]
    try:
        for logger in loggers:
            logger.setLevel(logging.DEBUG)
            logger.disabled = False
            logger.filters.insert(-1, keep)
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


def find_graph_breaks(fn, *args, **kwargs):
    return _find(fn, args, kwargs, _messages)
