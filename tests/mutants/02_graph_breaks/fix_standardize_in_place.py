"""Mistake: fixed_standardize works in place on its argument (`x -= mean; x /= std + 1e-5; return x`): the
same value, but the caller's tensor is changed. Blind round 2: wrong_inplace_standardize.py, miss J."""
import contextlib
import logging
import warnings

import torch
import torch._dynamo

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("fixed_standardize",)



def fixed_standardize(x):
    mean, std = x.mean(), x.std()
    x -= mean
    x /= std + 1e-5
    return x


find_graph_breaks = _ref.find_graph_breaks
