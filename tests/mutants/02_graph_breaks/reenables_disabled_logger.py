"""Mistake: the finder quiets torch's `.item()` hint by disabling its logger (`disabled = True` on
torch._dynamo.variables.tensor) and afterwards sets `disabled = False` ("loggers are enabled by default")
instead of the value it found: a user who had disabled that logger finds it enabled again. (Blind round 1:
wrong_disabled_reset.py.)"""
import logging

from checker.kit import load_reference

_ref = load_reference("02_graph_breaks", "hunt.py")
GraphBreak = _ref.GraphBreak
globals().update({name: getattr(_ref, name) for name in dir(_ref) if name.startswith("fixed_")})

KILLED_BY = ("keeps_users_logging_settings",)


def find_graph_breaks(fn, *args, **kwargs):
    hint = logging.getLogger("torch._dynamo.variables.tensor")
    hint.disabled = True
    try:
        return _ref.find_graph_breaks(fn, *args, **kwargs)
    finally:
        hint.disabled = False
