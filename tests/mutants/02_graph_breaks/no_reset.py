"""Mistake: the finder does not call torch._dynamo.reset() first, so a function compiled before runs
its cached code and nothing is traced, or reported."""
import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("resets_dynamo_first",)


def find_graph_breaks(fn, *args, **kwargs):
    with _ref._graph_break_messages() as messages:
        torch.compile(fn, backend="eager")(*args, **kwargs)
    breaks, seen = [], set()
    for message in messages:
        location = _ref._location(message)
        if location and location not in seen:
            seen.add(location)
            breaks.append(GraphBreak(location[0], location[1], _ref._cause(message)))
    return breaks
