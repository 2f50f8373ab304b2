"""Mistake (blind round 2, wrong_inplace_only_x): the in-place filter looks only at writes into the pair's first
input, x ("weight and bias are parameters, nothing writes into them"). A write into the weight or the bias the pair
reads (b = fc.bias * 1; ...; b.add_(1.0)) between the pair and the GELU's first reader goes unseen: the fused op,
put after it, reads the written bias, and the output changes."""
from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)


def no_in_place_write(match, graph, pattern):
    inputs = _ref._views_of({match.placeholder_nodes[0]}, graph)
    return not any(_ref._writes_in_place(node, inputs) for node in _ref._between_match_and_insertion(match, graph))


_ref.FILTERS[1] = no_in_place_write
