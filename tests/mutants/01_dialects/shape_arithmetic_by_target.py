"""Mistake: every call to a Python operator (operator.mul, operator.add, ...) is shape arithmetic, whatever it
computes. In Dynamo graphs `a * b` and `a + b` on tensors are operator.mul / operator.add too: torch-level."""
import operator

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = (
    "dynamo_export_graphs",
    "random_mlps_in_cond_no_grad_custom_op_or_symbolic_batch",
    "random_programs_in_every_capture_and_edit",
    "shape_arithmetic_is_neutral",
    "torch_and_aten_nodes_raise_mixed",
    "torch_level_calls_are_torch",
)


def node_dialect(node):
    if node.op == "call_function" and getattr(node.target, "__module__", None) in ("_operator", operator.__name__):
        return None
    return _right_node_dialect(node)


# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
