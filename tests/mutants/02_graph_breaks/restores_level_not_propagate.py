"""Mistake: the finder sets the graph-break loggers' level and propagate flag, but on the way out puts back
only the level: the loggers stay cut off from torch's handler, so a user who later switches graph_breaks
logging on sees nothing."""
import logging

import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("finds_breaks_past_users_settings", "keeps_users_logging_settings", "leaves_logging_as_found",
             "restores_logging_when_fn_raises")


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    collector = _ref._MessageCollector()
    saved = [(logger, logger.level) for logger in _ref._graph_break_loggers()]
    for logger, _ in saved:
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        logger.addHandler(collector)
    try:
        torch.compile(fn, backend="eager")(*args, **kwargs)
    finally:
        for logger, level in saved:
            logger.removeHandler(collector)
            logger.setLevel(level)
    breaks, seen = [], set()
    for message in collector.messages:
        location = _ref._location(message)
        if location and location not in seen:
            seen.add(location)
            breaks.append(GraphBreak(location[0], location[1], _ref._cause(message)))
    return breaks
