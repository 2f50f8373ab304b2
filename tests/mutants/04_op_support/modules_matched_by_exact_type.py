"""Mistake: call_module nodes are looked up by exact class, `MODULE_OPS.get(type(module))`. Right for nn.Linear
itself, but a subclass that keeps nn.Linear's forward -- torch's own NonDynamicallyQuantizableLinear, the
out_proj of every nn.MultiheadAttention -- computes exactly a Linear and silently falls back to the CPU."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_right_canonical_op = _ref.canonical_op

KILLED_BY = ("module_subclasses_count_only_with_their_base_forward",)


def canonical_op(node, submodules):
    if node.op == "call_module":
        module = submodules.get(node.target)
        return _ref.MODULE_OPS.get(type(module)) if module is not None else None
    return _right_canonical_op(node, submodules)


_ref.canonical_op = canonical_op
NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
