"""Mistake: on the way out the finder empties the graph-break loggers' handler lists (`logger.handlers.clear()`)
instead of removing the one handler it added. With torch's defaults there is nothing else there; a user who had
put a handler of their own on those loggers loses it."""
import logging

import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("finds_breaks_past_users_settings", "keeps_users_logging_settings")


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    collector = _ref._MessageCollector()
    saved = [(logger, logger.level, logger.propagate) for logger in _ref._graph_break_loggers()]
    for logger, _, _ in saved:
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        logger.addHandler(collector)
    try:
        torch.compile(fn, backend="eager")(*args, **kwargs)
    finally:
        for logger, level, propagate in saved:
            logger.handlers.clear()
            logger.setLevel(level)
            logger.propagate = propagate
    breaks, seen = [], set()
    for message in collector.messages:
        location = _ref._location(message)
        if location and location not in seen:
            seen.add(location)
            breaks.append(GraphBreak(location[0], location[1], _ref._cause(message)))
    return breaks
