"""Mistake: "fixing" breaks with torch.compiler.disable.

Disabling the part that breaks does not put it in the graph: the disabled call runs in eager between
two graphs, which fullgraph=True reports as an error; disabling the whole function leaves its breaks.
"""
import torch

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak, find_graph_breaks = _ref.GraphBreak, _ref.find_graph_breaks
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("fixed_scale_by_peak", "fixed_count_above")


@torch.compiler.disable
def _peak(x):
    return x.abs().max().item()


def fixed_scale_by_peak(x):
    return x / (_peak(x) + 1e-6)


@torch.compiler.disable
def fixed_count_above(x, thresholds):
    return torch.tensor([int((x > t).sum().item()) for t in thresholds])
