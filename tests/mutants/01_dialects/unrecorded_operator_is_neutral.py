"""Mistake: a Python operator call (operator.mul, operator.add, ...) with no recorded value at all is taken for
size arithmetic nobody recorded, so it is neutral. symbolic_trace records no values: its `operator.mul` is
torch-level. Blind round 1's wrong_unrecorded_operator.py: symbolic_trace of
`torch.ops.aten.relu.default(x) * 2` reads as CORE_ATEN instead of MixedDialectError."""
import operator

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = (
    "random_programs_in_every_capture_and_edit",
    "torch_and_aten_nodes_raise_mixed",
    "torch_level_calls_are_torch",
)


def node_dialect(node):
    if (node.op == "call_function" and "val" not in node.meta and "example_value" not in node.meta
            and getattr(node.target, "__module__", None) in ("_operator", operator.__name__)):
        return None
    return _right_node_dialect(node)


# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
