"""Mistake: the finder puts logging back after fn returns, but not in a `finally:` block: when fn raises, the
graph-break loggers stay switched on, silenced (propagate off) and holding the finder's handler."""
import logging

import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("finds_breaks_past_users_settings", "restores_logging_when_fn_raises")


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    collector = _ref._MessageCollector()
    saved = [(logger, logger.level, logger.propagate) for logger in _ref._graph_break_loggers()]
    for logger, _, _ in saved:
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        logger.addHandler(collector)
    torch.compile(fn, backend="eager")(*args, **kwargs)
    for logger, level, propagate in saved:
        logger.removeHandler(collector)
        logger.setLevel(level)
        logger.propagate = propagate
    breaks, seen = [], set()
    for message in collector.messages:
        location = _ref._location(message)
        if location and location not in seen:
            seen.add(location)
            breaks.append(GraphBreak(location[0], location[1], _ref._cause(message)))
    return breaks
