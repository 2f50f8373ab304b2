"""Mistake: a custom op (kata.linear_gelu, the profiler's ops) is an aten-level op that is never core.

Torch-level code calls custom ops like any function and every lowering keeps them as they are, so this makes
Dynamo and symbolic_trace graphs that call one "mixed", and core ATen graphs that carry one ATEN.
"""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = (
    "custom_ops_are_neutral",
    "decomposed_exports_are_core_aten",
    "dialect_is_about_content_not_tool",
    "dynamo_graphs_with_custom_ops_cond_and_symbolic_sizes_are_torch",
    "graph_without_ops_is_torch",
    "module_graphs_with_custom_ops_and_packets_are_module",
    "random_mlps_in_cond_no_grad_custom_op_or_symbolic_batch",
)


def node_dialect(node):
    target = node.target
    if node.op == "call_function" and isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        if _ref._namespace(target) not in _ref.ATEN_NAMESPACES:
            return Dialect.ATEN
    return _right_node_dialect(node)


# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
