"""Mistake: a module subclass "overrides forward" exactly when its own class body defines `forward`. A grandchild
that inherits an override without redefining it (torch.ao.nn.qat.dynamic.Linear under torch.ao.nn.qat.Linear) is
then taken for an nn.Linear, and one whose body restores `forward = nn.Linear.forward` for no NPU op. The lesson's
test is `type(module).forward is nn.Linear.forward`, at any depth (blind round 1, W03)."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")


def _module_op(module):
    cls = type(module)
    for base in cls.__mro__:
        if base in _ref.MODULE_OPS:
            overrides = cls is not base and "forward" in vars(cls)  # the wrong rule: only the class's own body
            return None if overrides else _ref.MODULE_OPS[base]
    return None


_ref._module_op = _module_op

KILLED_BY = ("module_subclasses_count_only_with_their_base_forward",)

canonical_op, NPUOperatorSupport, classify = _ref.canonical_op, _ref.NPUOperatorSupport, _ref.classify
