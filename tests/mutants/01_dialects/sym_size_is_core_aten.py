"""Mistake: the size row comes after the aten rows (the lesson's order before issue 33), so an aten overload that
reads a size, aten.sym_size.int (tagged core), is CORE_ATEN instead of neutral: torch._dynamo.export graphs that read
x.shape then raise MixedDialectError, and BERT and ViT captured that way with them."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = (
    "dynamo_export_graphs",
    "random_mlps_in_every_capture",
    "shape_arithmetic_is_neutral",
)


def node_dialect(node):
    target = node.target
    if node.op == "call_function" and isinstance(target, torch._ops.OpOverload) and target.namespace in ("aten", "prims"):
        return Dialect.CORE_ATEN if torch.Tag.core in target.tags else Dialect.ATEN
    return _right_node_dialect(node)


# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
