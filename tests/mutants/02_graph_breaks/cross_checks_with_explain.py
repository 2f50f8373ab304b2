"""Mistake: after collecting the reports the finder runs `torch._dynamo.explain(fn)(*args, **kwargs)` to
cross-check them, so fn runs twice and its side effects happen twice. Blind round 2:
wrong_explain_crosscheck.py, miss P."""
import contextlib
import logging
import warnings

import torch
import torch._dynamo

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ('runs_fn_once',)


def find_graph_breaks(fn, *args, **kwargs):
    found = _ref.find_graph_breaks(fn, *args, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        explained = torch._dynamo.explain(fn)(*args, **kwargs)
    if explained.graph_count == 0 and not found:  # only a sanity check: the answer is the collected list
        return []
    torch._dynamo.reset()
    return found
