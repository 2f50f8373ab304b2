"""Mistake: the clamp_norm "fix" still branches in Python on a tensor's value, via .item().

With fullgraph=True Dynamo captures .item() as a symbolic float, then cannot decide the `if` on it at
trace time: the branch is data-dependent, so there is no single graph.
"""
import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak, find_graph_breaks = _ref.GraphBreak, _ref.find_graph_breaks
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("fixed_clamp_norm",)


def fixed_clamp_norm(x):
    norm = x.norm()
    if norm.item() > 1.0:
        return x / norm
    return x
