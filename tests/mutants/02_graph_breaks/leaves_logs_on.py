"""Mistake: the finder switches graph-break logging on with torch._logging.set_logs(graph_breaks=True)
and never switches it off, so every later torch.compile prints its breaks."""
import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("finds_breaks_past_users_settings", "keeps_users_logging_settings", "leaves_logging_as_found",
             "restores_logging_when_fn_raises")


def find_graph_breaks(fn, *args, **kwargs):
    torch._logging.set_logs(graph_breaks=True)
    return _ref.find_graph_breaks(fn, *args, **kwargs)
