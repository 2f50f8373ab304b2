"""Mistake: the finder sorts its list by line number. Breaks happen in execution order, and a helper defined
further down the file can break before its caller's next line."""
from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("breaks_in_two_files_in_order", "several_breaks_in_execution_order")


def find_graph_breaks(fn, *args, **kwargs):
    return sorted(_ref.find_graph_breaks(fn, *args, **kwargs), key=lambda brk: brk.lineno)
