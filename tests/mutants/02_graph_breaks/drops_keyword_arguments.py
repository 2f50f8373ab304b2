"""Mistake: the finder calls fn with the positional arguments only, so a keyword argument never reaches it
(here the break happens only when exact=True arrives)."""
from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("passes_keyword_arguments",)


def find_graph_breaks(fn, *args, **kwargs):
    return _ref.find_graph_breaks(fn, *args)
