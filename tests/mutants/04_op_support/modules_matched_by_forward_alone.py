"""Mistake: call_module nodes are resolved by the module's forward function alone ({nn.Linear.forward: "linear",
...}.get(type(module).forward)), so a class that subclasses none of the table's classes but borrows
`forward = nn.Linear.forward` is taken for a linear. Breaks "The rule starts from the class, though: a class that
subclasses none of the table's classes is no op of the table even if its body borrows forward = nn.Linear.forward"
(README.md, 'Subclasses'; blind round 4, missing rule)."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")

_BY_FORWARD = {cls.forward: op for cls, op in _ref.MODULE_OPS.items()}


def _module_op(module):
    return _BY_FORWARD.get(type(module).forward)  # the wrong rule: no look at the class hierarchy


_ref._module_op = _module_op  # canonical_op asks this one

KILLED_BY = ("module_subclasses_count_only_with_their_base_forward",)

canonical_op, NPUOperatorSupport, classify = _ref.canonical_op, _ref.NPUOperatorSupport, _ref.classify
