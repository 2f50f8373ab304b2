"""Mistake: fixed_count_above assumes x is a vector: it sorts x along its last dimension and counts with
searchsorted, instead of over every element. Right for 1-D x; a matrix x (which the suspect counts over all its
elements) fails. (Blind round 1: wrong_count_above_vector.py.)"""
import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak, find_graph_breaks = _ref.GraphBreak, _ref.find_graph_breaks
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("fixed_count_above",)


def fixed_count_above(x, thresholds):
    ordered = torch.sort(x).values
    return ordered.shape[-1] - torch.searchsorted(ordered, thresholds, right=True)
