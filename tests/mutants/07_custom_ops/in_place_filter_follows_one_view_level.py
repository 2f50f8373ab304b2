"""Mistake (blind round 3, wrong_inplace_one_level_views): the in-place filter adds to an input's aliases only the
nodes whose first argument IS the input, so a view of a view (`t[0].view(-1).mul_(0.5)`, `w.t()[1:].mul_(0.5)`)
is missed. Lesson: "A write through a view of an input writes into the input's memory ... follow views back to the
input" -- through a chain of views of any depth."""
import operator

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)


def _one_level(inputs, graph):
    views = set(inputs)
    for node in graph.nodes:
        if node.op in ("call_method", "call_function") and node.args and node.args[0] in inputs and (
                node.target is operator.getitem or (node.target if node.op == "call_method"
                                                    else getattr(node.target, "__name__", "")) in _ref.VIEW_METHODS):
            views.add(node)
    return views


_ref._views_of = _one_level
