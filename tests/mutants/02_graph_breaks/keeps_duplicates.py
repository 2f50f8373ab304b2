"""Mistake: one GraphBreak per log record. Dynamo reports a line again when it traces the same code
again (the helper's own frame after the caller broke inside it, a resumed frame, a second call)."""
import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("break_inside_helper", "breaks_in_two_files_in_order", "frame_falls_back_entirely",
             "one_entry_per_line", "same_line_in_two_files", "several_breaks_in_execution_order")


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    with _ref._graph_break_messages() as messages:
        torch.compile(fn, backend="eager")(*args, **kwargs)
    return [GraphBreak(*_ref._location(m), _ref._cause(m)) for m in messages if _ref._location(m)]
