"""Mistake: a graph is written in one form, decided once: a graph holding any call_module node is a MODULE graph,
and only call_module Linears are Linears in it.

Breaks the lesson's "one graph can hold several forms: a `symbolic_trace` graph may hold a `call_module` Linear
beside an `F.linear` (a traced subclass, or functional code): decide the form node by node, never once per graph".
symbolic_trace keeps nn.Linear and nn.GELU whole but traces a subclass of one's own into get_attr + F.linear."""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = ("module_linear_then_functional_gelu",)

_linear_operands = _ref.linear_operands


def linear_operands(gm, node):
    if node.op != "call_module" and any(n.op == "call_module" for n in gm.graph.nodes):
        return None
    return _linear_operands(gm, node)


_ref.linear_operands = linear_operands
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
