"""Mistake: repeats are recognised by line number alone. A helper in another file that breaks on the same line
number as its caller is then taken for a repeat and dropped."""
import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("same_line_in_two_files",)


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    with _ref._graph_break_messages() as messages:
        torch.compile(fn, backend="eager")(*args, **kwargs)
    breaks, seen_lines = [], set()
    for message in messages:
        location = _ref._location(message)
        if location and location[1] not in seen_lines:
            seen_lines.add(location[1])
            breaks.append(GraphBreak(location[0], location[1], _ref._cause(message)))
    return breaks
