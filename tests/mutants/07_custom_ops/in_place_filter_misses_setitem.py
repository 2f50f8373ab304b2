"""Mistake (blind round 6, w06_setitem_missed): the in-place filter knows the augmented assignments (`t += 1`) but
not `t[0] = 0`, which Dynamo records as operator.setitem with t first. Lesson: "an in-place `operator` function or
`setitem` with it first"."""
import operator

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)

_ref.IN_PLACE_OPERATORS = _ref.IN_PLACE_OPERATORS - {operator.setitem}
