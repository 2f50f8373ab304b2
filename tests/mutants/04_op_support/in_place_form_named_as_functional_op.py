"""Mistake: an in-place form is the same op as its functional form, so the trailing underscore is dropped:
x.relu_() and aten.relu_.default become "relu", aten.add_.Tensor "add". Names are exact: the in-place forms are
not in NPU_OPS and run on the CPU (blind round 1, W02)."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_canonical = _ref.canonical_op


def canonical_op(node, submodules):
    name = _canonical(node, submodules)
    if isinstance(name, str) and name.endswith("_") and not name.endswith("__"):
        return name[:-1]  # the wrong rule
    return name


_ref.canonical_op = canonical_op  # NPUOperatorSupport and classify ask this one

KILLED_BY = ("in_place_forms_are_not_their_functional_op",)

NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
