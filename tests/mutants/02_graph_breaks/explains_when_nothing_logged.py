"""Mistake: when the logs report no break, the finder makes sure with `torch._dynamo.explain(fn)(*args, **kwargs)`
before returning [] ("an empty report might mean the logs missed something"): a function that Dynamo captures
whole runs twice, and its side effects happen twice. Blind round 4: wrong_explain_crosscheck.py.
Lesson: "Once means once: `fn` may have side effects (append to a list, count its calls, write a file), so don't
run it a second time"."""
import warnings

import torch
import torch._dynamo

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("runs_fn_once",)


def find_graph_breaks(fn, *args, **kwargs):
    found = _ref.find_graph_breaks(fn, *args, **kwargs)
    if not found:  # nothing logged? double-check with explain
        torch._dynamo.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            explained = torch._dynamo.explain(fn)(*args, **kwargs)
        torch._dynamo.reset()
        if explained.graph_break_count > 0:
            raise RuntimeError("the logs missed a break")
    return found
