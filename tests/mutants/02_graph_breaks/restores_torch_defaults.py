"""Mistake: on the way out the finder puts the graph-break loggers back to torch's defaults (level NOTSET,
propagate on) instead of to what it found. Right for a user who never touched logging; a user who had
switched graph_breaks logging on (TORCH_LOGS=graph_breaks, set_logs(graph_breaks=True)) loses it."""
import contextlib
import logging

import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("finds_breaks_past_users_settings", "keeps_users_logging_settings")


@contextlib.contextmanager
def _messages():
    collector = _ref._MessageCollector()
    loggers = _ref._graph_break_loggers()
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        logger.addHandler(collector)
    try:
        yield collector.messages
    finally:
        for logger in loggers:
            logger.removeHandler(collector)
            logger.setLevel(logging.NOTSET)
            logger.propagate = True


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    with _messages() as messages:
        torch.compile(fn, backend="eager")(*args, **kwargs)
    breaks, seen = [], set()
    for message in messages:
        location = _ref._location(message)
        if location and location not in seen:
            seen.add(location)
            breaks.append(GraphBreak(location[0], location[1], _ref._cause(message)))
    return breaks
