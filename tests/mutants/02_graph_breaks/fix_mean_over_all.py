"""Mistake: positive_mean rewritten without the boolean mask, but averaged over every element instead
of over the positive ones (one graph, wrong numbers)."""
import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak, find_graph_breaks = _ref.GraphBreak, _ref.find_graph_breaks
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("fixed_positive_mean",)


def fixed_positive_mean(x):
    return torch.where(x > 0, x, 0).mean()
