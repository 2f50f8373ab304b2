"""Mistake: the finder keeps one entry per location in a dict, in the order locations first appear, but each
later report of a location overwrites its reason: a line that breaks twice (`print("peak", y.max().item())`,
first at `.item()`, then at `print`) gets the second report's reason. Blind round 2: wrong_last_reason_wins.py,
miss E."""
import contextlib
import logging
import warnings

import torch
import torch._dynamo

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ('one_entry_per_line',)


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    with _ref._graph_break_messages() as messages, warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=r"torch\.")
        torch.compile(fn, backend="eager")(*args, **kwargs)
    entries = {}
    for message in messages:
        location = _ref._location(message)
        if location is not None:
            entries[location] = GraphBreak(location[0], location[1], _ref._cause(message))
    return list(entries.values())
