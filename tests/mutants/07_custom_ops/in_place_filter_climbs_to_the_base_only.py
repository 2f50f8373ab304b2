"""Mistake (blind round 5, the probe's axis): the in-place filter follows views forward from each input and climbs
from an input to the tensors it is a view of (its base), but not down again to the base's other views: with
`t = s[0]`, a write through `s[:, 0]` (which shares s[0, 0] with t) or, when autograd records the pair, through
`s[1]` after its first reader is not seen. Lesson: "What counts as a write into an input ... the tensor the input
is a view of (its base) and every other view of that base"."""
import operator

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)


def _is_view(node):
    return node.op in ("call_method", "call_function") and node.args and (
        node.target is operator.getitem or (node.target if node.op == "call_method"
                                            else getattr(node.target, "__name__", "")) in _ref.VIEW_METHODS)


def _up_and_forward(inputs, graph):
    views = set(inputs)
    for node in list(inputs):  # up: the base of an input, the base's base
        while _is_view(node) and hasattr(node.args[0], "op"):
            node = node.args[0]
            views.add(node)
    bases = set(views)
    for node in graph.nodes:  # forward from the inputs only, not from the bases
        if _is_view(node) and node.args[0] in (views - bases) | set(inputs):
            views.add(node)
    return views


_ref._views_of = _up_and_forward
