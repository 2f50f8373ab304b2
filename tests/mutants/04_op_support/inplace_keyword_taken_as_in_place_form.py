"""Mistake: the keyword inplace=True makes a call an in-place form, so nn.ReLU(inplace=True) modules and
F.relu(x, inplace=True) calls are "relu_" and stay on the CPU. A keyword does not change the callable: both are
"relu" (blind round 2, wrong_inplace_keyword)."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_canonical = _ref.canonical_op


def canonical_op(node, submodules):
    name = _canonical(node, submodules)
    module = submodules.get(node.target) if node.op == "call_module" else None
    if isinstance(name, str) and (node.kwargs.get("inplace") is True or getattr(module, "inplace", False) is True):
        return name + "_"  # the wrong rule
    return name


_ref.canonical_op = canonical_op  # NPUOperatorSupport and classify ask this one

KILLED_BY = ("in_place_forms_are_not_their_functional_op",)

NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
