"""Mistake: the finder quiets torch's warnings with a bare `warnings.filterwarnings("ignore", module=r"torch\.")`
and undoes it with `warnings.filters.pop(0)`, taking "filterwarnings puts one entry in front" for "pop(0) removes
what I added". When the user already has that same filter, filterwarnings moves the user's entry to the front instead
of adding one, and pop(0) deletes it: the user loses a filter of their own.
Lesson: "change them only inside `warnings.catch_warnings()`, which puts them back, never with a bare
`warnings.simplefilter` or `warnings.filterwarnings`"."""
import warnings

import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("keeps_users_logging_settings",)


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    with _ref._graph_break_messages() as messages:
        warnings.filterwarnings("ignore", module=r"torch\.")
        try:
            torch.compile(fn, backend="eager")(*args, **kwargs)
        finally:
            warnings.filters.pop(0)
            warnings._filters_mutated()
    breaks, seen = [], set()
    for message in messages:
        location = _ref._location(message)
        if location is None or location in seen:
            continue
        seen.add(location)
        breaks.append(GraphBreak(location[0], location[1], _ref._cause(message)))
    return breaks
