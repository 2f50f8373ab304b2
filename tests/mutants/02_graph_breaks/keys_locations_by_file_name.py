"""Mistake: repeats are recognised by the file's base name and the line, `(os.path.basename(filename), lineno)`,
as if two modules could not share a file name. Two files with the same name in different folders (`pkg_a/util.py`
and `pkg_b/util.py`) that break on the same line number are then taken for one location and the second is dropped.
Lesson: "A location is the pair `(filename, lineno)` ... the same line number in two different files is two
breaks", the filename being "the full path Dynamo prints"."""
import os

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
    breaks, seen = [], set()
    for message in messages:
        location = _ref._location(message)
        if location is None:
            continue
        key = (os.path.basename(location[0]), location[1])
        if key not in seen:
            seen.add(key)
            breaks.append(GraphBreak(location[0], location[1], _ref._cause(message)))
    return breaks
