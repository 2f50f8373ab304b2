"""Mistake: a call_function whose recorded value is not a tensor is taken for structure, including one with no
recorded value at all, so every call_function of a symbolic_trace graph (which records none) comes out neutral."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_is_structure = _ref._is_structure

KILLED_BY = (
    "random_programs_in_every_capture_and_edit",
    "shape_arithmetic_is_neutral",
    "torch_and_aten_nodes_raise_mixed",
    "torch_level_calls_are_torch",
)


def _is_structure(node):
    return _right_is_structure(node) or not isinstance(_ref._recorded_value(node), torch.Tensor)


# the reference's node_dialect calls the module-level _is_structure: point it at the mistake
_ref._is_structure = _is_structure
node_dialect, detect_dialect = _ref.node_dialect, _ref.detect_dialect
