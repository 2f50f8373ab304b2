"""Mistake: the finder switches graph-break logging on with torch._logging.set_logs(graph_breaks=True) and
"restores" it with torch._logging.set_logs(). set_logs resets every setting it is not given (a user's
recompiles or graph_breaks logging is gone) and replaces torch's own handlers with new ones."""
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
    torch._logging.set_logs(graph_breaks=True)
    loggers = _ref._graph_break_loggers()
    for logger in loggers:
        logger.addHandler(collector)
    try:
        torch.compile(fn, backend="eager")(*args, **kwargs)
    finally:
        for logger in loggers:
            logger.removeHandler(collector)
        torch._logging.set_logs()
    breaks, seen = [], set()
    for message in collector.messages:
        location = _ref._location(message)
        if location and location not in seen:
            seen.add(location)
            breaks.append(GraphBreak(location[0], location[1], _ref._cause(message)))
    return breaks
