"""Mistake (blind round 2, wrong_inplace_kwarg_present): the in-place filter counts any node that carries an
`inplace` keyword as a write, whatever its value. nn.ReLU() reaches Dynamo's graph as relu(t, inplace=False),
which writes nothing: a safe pair with an nn.ReLU() on its input before the GELU's first reader is left unfused."""
from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)

_writes_in_place = _ref._writes_in_place


def _keyword_present_is_a_write(node, inputs):
    if node.op == "call_function" and "inplace" in node.kwargs and node.args and node.args[0] in inputs:
        return True
    return _writes_in_place(node, inputs)


_ref._writes_in_place = _keyword_present_is_a_write
