"""Mistake: every OpOverload or packet is named by its packet name, whatever its namespace. A user's own custom
op `mylib::gelu` then counts as "gelu" and goes to the NPU, which has kernels only for aten ops and its own
kata ops -- the same mistake as trusting a Python function's __name__."""
import torch

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_right_canonical_op = _ref.canonical_op

KILLED_BY = ("custom_ops_of_other_namespaces_stay_on_cpu",)


def canonical_op(node, submodules):
    if node.op == "call_function" and isinstance(node.target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return str(node.target).split(".")[1]
    return _right_canonical_op(node, submodules)


_ref.canonical_op = canonical_op
NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
