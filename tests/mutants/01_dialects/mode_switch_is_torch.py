"""Mistake: torch._C._set_grad_enabled and the autocast enter/exit calls are torch-level calls, so
make_fx(pre_dispatch=True) of a model with a no_grad or autocast block reads as mixed."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError

KILLED_BY = ("control_flow_and_no_grad_graphs_are_aten", "mode_switches_are_neutral")

_ref.MODE_SWITCHES = ()
node_dialect, detect_dialect = _ref.node_dialect, _ref.detect_dialect
