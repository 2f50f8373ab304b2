"""Mistake: the finder trusts torch._dynamo.explain().break_reasons alone.

explain() builds its list from the graphs that were compiled, so a break with no op before it (no graph
to attach it to) and a frame that falls back to eager entirely (zero graphs, "-1 breaks") are missing.
"""
import torch
import torch._dynamo

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("reason_is_dynamos_cause", "module_forward", "break_before_any_op", "frame_falls_back_entirely",
             "several_breaks_in_execution_order", "resets_dynamo_first")


def find_graph_breaks(fn, *args, **kwargs):
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(fn)(*args, **kwargs)
    breaks, seen = [], set()
    for reason in explanation.break_reasons:
        frame = reason.user_stack[-1]
        if (frame.filename, frame.lineno) not in seen:
            seen.add((frame.filename, frame.lineno))
            breaks.append(GraphBreak(frame.filename, frame.lineno, reason.reason.strip().splitlines()[0]))
    return breaks
