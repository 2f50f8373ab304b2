"""Mistake: torch's own primitives count as ATen ops, so the prims namespace is accepted next to aten and kata
(`prims.mul.default` is "mul"). Breaks "the packet's name, if its namespace is aten or kata ... the NPU has kernels
for aten ops and its own kata ops only" (README.md, 'What a node becomes'; blind round 3, wrong_04)."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_ref.NPU_NAMESPACES = ("aten", "kata", "prims")  # the wrong rule

KILLED_BY = ("custom_ops_of_other_namespaces_stay_on_cpu",)

canonical_op, NPUOperatorSupport, classify = _ref.canonical_op, _ref.NPUOperatorSupport, _ref.classify
