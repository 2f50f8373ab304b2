"""Mistake: the scale_by_peak "fix" keeps .item() and is checked with fullgraph=True only. Under
fullgraph=True Dynamo captures .item() as a symbolic float, so one graph comes out; a plain
torch.compile still breaks the graph at .item()."""
from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak, find_graph_breaks = _ref.GraphBreak, _ref.find_graph_breaks
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("fixed_scale_by_peak",)


def fixed_scale_by_peak(x):
    peak = x.abs().max().item()
    return x / (peak + 1e-6)
