"""Mistake: custom ops are recognised by the one namespace the lesson shows, `kata`; the profiler's own ops
(namespace `profiler`) then count as aten-level ops that are not core."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = (
    "custom_ops_are_neutral",
    "dialect_is_about_content_not_tool",
)


def node_dialect(node):
    target = node.target
    if node.op == "call_function" and isinstance(target, torch._ops.OpOverload) and target.namespace not in (
            "kata", "aten", "prims"):  # aten and prims overloads go through the reference's rows (sizes first)
        return Dialect.CORE_ATEN if torch.Tag.core in target.tags else Dialect.ATEN
    return _right_node_dialect(node)


# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
