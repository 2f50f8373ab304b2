"""Mistake: a call node is named by its target alone, so `operator.mul` on two SymInt sizes (export with a Dim,
Dynamo with dynamic=True) is "mul" and goes to the NPU. It is arithmetic the host runs to compute a shape; its
recorded value (meta["val"], or Dynamo's meta["example_value"]) is a SymInt, not a tensor."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_ref._computes_no_tensor = lambda node: False  # the missing rule

KILLED_BY = ("size_arithmetic_is_no_npu_op",)

canonical_op, NPUOperatorSupport, classify = _ref.canonical_op, _ref.NPUOperatorSupport, _ref.classify
