"""Mistake: operator.getitem takes the level of the value it unpacks, so in a Dynamo graph the getitem that
unpacks a torch-level chunk is TORCH instead of neutral."""
import operator

import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = (
    "functorch_bookkeeping_is_neutral",
    "getitem_is_neutral",
    "random_programs_in_every_capture_and_edit",
    "shape_arithmetic_is_neutral",
)


def node_dialect(node):
    if node.op == "call_function" and node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node):
        return _right_node_dialect(node.args[0])
    return _right_node_dialect(node)


# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
