"""Mistake: call_module nodes are looked up with isinstance, so every subclass of nn.Linear is a "linear" --
including torch.ao.nn.qat.Linear, whose forward fake-quantizes the weight first. The NPU's linear kernel
would compute something else than the module does."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_right_canonical_op = _ref.canonical_op

KILLED_BY = ("generated_programs_agree_with_reference", "module_subclasses_count_only_with_their_base_forward")


def canonical_op(node, submodules):
    if node.op == "call_module":
        module = submodules.get(node.target)
        return next((op for cls, op in _ref.MODULE_OPS.items() if isinstance(module, cls)), None)
    return _right_canonical_op(node, submodules)


_ref.canonical_op = canonical_op
NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
