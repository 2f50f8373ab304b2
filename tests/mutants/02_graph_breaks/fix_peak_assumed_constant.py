"""Mistake: fixed_scale_by_peak reads the peak through torch._dynamo.assume_constant_result(... .item()): one
graph, right on the first input, but the peak is computed at compile time and baked in, so the same compiled
function called on [10, 20, 40] after [1, 2, 4] divides by 4. Blind round 2: wrong_constant_peak.py, miss I."""
import contextlib
import logging
import warnings

import torch
import torch._dynamo

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("fixed_scale_by_peak",)



@torch._dynamo.assume_constant_result
def _peak(x):
    return x.abs().max().item()


def fixed_scale_by_peak(x):
    return x / (_peak(x) + 1e-6)


find_graph_breaks = _ref.find_graph_breaks
