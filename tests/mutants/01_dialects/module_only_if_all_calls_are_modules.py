"""Mistake: a graph is MODULE only when every op node is call_module.

symbolic_trace keeps free functions (torch.relu, x.softmax()) as call_function/call_method next to the
call_module nodes, so real module graphs come out TORCH.
"""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("module_graphs_with_custom_ops_and_packets_are_module", "symbolic_trace_of_modules_is_module")


def detect_dialect(gm):
    dialect = _ref.detect_dialect(gm)  # keeps the reference's MixedDialectError
    levels = {node_dialect(n) for n in _ref.graph_nodes(gm)} - {None}
    return Dialect.TORCH if dialect == Dialect.MODULE and levels != {Dialect.MODULE} else dialect
