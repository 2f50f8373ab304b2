"""Mistake: while collecting, the finder turns `propagate` off on the graph-break loggers and afterwards sets it
back to True, torch's default, instead of the value it found. A user who had turned propagate off on a
graph-break logger (to keep its reports to a handler of their own) finds it on again.
Lesson: "every logger's level, `propagate` flag, ... Remember what you change before you change it and put back
*those* values, not torch's defaults"."""
import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("keeps_users_logging_settings",)


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    loggers = _ref._graph_break_loggers()
    with _ref._graph_break_messages() as messages:
        for logger in loggers:
            logger.propagate = False
        try:
            torch.compile(fn, backend="eager")(*args, **kwargs)
        finally:
            for logger in loggers:
                logger.propagate = True
    breaks, seen = [], set()
    for message in messages:
        location = _ref._location(message)
        if location is None or location in seen:
            continue
        seen.add(location)
        breaks.append(GraphBreak(location[0], location[1], _ref._cause(message)))
    return breaks
