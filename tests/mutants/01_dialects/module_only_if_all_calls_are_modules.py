"""Mistake: a graph is MODULE only when every op node is call_module.

symbolic_trace keeps free functions (torch.relu, x.softmax()) as call_function/call_method next to the
call_module nodes, so real module graphs come out TORCH.
"""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("symbolic_trace_of_modules_is_module",)


def detect_dialect(gm):
    dialects = [d for d in map(node_dialect, gm.graph.nodes) if d is not None]
    if dialects and all(d == Dialect.MODULE for d in dialects):
        return Dialect.MODULE
    return _ref.detect_dialect(gm) if Dialect.MODULE not in dialects else Dialect.TORCH
