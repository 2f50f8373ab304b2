"""Mistake (blind round 3, wrong_inplace_anywhere): a write into an input of the pair anywhere in the graph (before
the pair, after its readers) refuses it, whether autograd records the pair or not. Lesson: "A write before the pair
changes nothing", and one after the GELU's first reader changes nothing either when autograd does not record the
pair (nothing it reads requires grad, or grad is off): fuse every pair that is safe."""
from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)


def _no_write_anywhere(match, graph, pattern):
    inputs = _ref._views_of({node for node in match.placeholder_nodes if hasattr(node, "users")}, graph)
    matched = {node for node in match.nodes_map.values() if node not in match.placeholder_nodes}
    return not any(_ref._writes_in_place(node, inputs) for node in graph.nodes if node not in matched)


_ref.FILTERS[_ref.FILTERS.index(_ref.no_in_place_write)] = _no_write_anywhere
