"""Mistake: the finder silences torch's own warnings with warnings.filterwarnings("ignore", module=r"torch\.")
outside any warnings.catch_warnings(), so the filter stays in Python's warnings filters after the call: every
torch warning of the rest of the process is hidden."""
import logging
import warnings

import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("finds_breaks_past_users_settings", "keeps_users_logging_settings", "leaves_logging_as_found",
             "restores_logging_when_fn_raises")


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    warnings.filterwarnings("ignore", module=r"torch\.")
    with _ref._graph_break_messages() as messages:
        torch.compile(fn, backend="eager")(*args, **kwargs)
    breaks, seen = [], set()
    for message in messages:
        location = _ref._location(message)
        if location and location not in seen:
            seen.add(location)
            breaks.append(GraphBreak(location[0], location[1], _ref._cause(message)))
    return breaks
