"""Mistake: every OpOverloadPacket is a torch-level call, custom ops included. Dynamo and symbolic_trace keep
a call to torch.ops.kata.linear_gelu as the packet kata.linear_gelu, which is still a custom op: neutral."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect

KILLED_BY = ("custom_ops_are_neutral", "random_mlps_in_cond_no_grad_custom_op_or_symbolic_batch")


def node_dialect(node):
    if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverloadPacket):
        return Dialect.TORCH
    return _right_node_dialect(node)


# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
