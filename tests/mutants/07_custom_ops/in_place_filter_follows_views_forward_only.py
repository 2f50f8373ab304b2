"""Mistake (blind round 5, probe_base_write): the in-place filter follows views only forward, from each input of the
pair to its views and their views (hint 4's old recipe), so a write into the tensor an input is a view of is not
seen: with `t = s[0]`, `s.mul_(0.5)` between the pair and its first reader writes into t, and the fused op, put
after it, reads the halved t. Lesson: "What counts as a write into an input ... the tensor the input is a view of
(its base) and every other view of that base" -- anything that shares the input's memory."""
import operator

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)


def _forward_only(inputs, graph):
    views = set(inputs)
    for node in graph.nodes:
        if node.op in ("call_method", "call_function") and node.args and node.args[0] in views and (
                node.target is operator.getitem or (node.target if node.op == "call_method"
                                                    else getattr(node.target, "__name__", "")) in _ref.VIEW_METHODS):
            views.add(node)
    return views


_ref._views_of = _forward_only
