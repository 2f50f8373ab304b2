"""Mistake (blind round 6, w09_inplace_result_not_alias): the in-place filter follows views, but not what an
in-place op returns: `a = s.mul_(1.0)` is s itself, so a later write through a (or into s, when the pair reads a view
of a) goes unseen. Lesson: "a write counts when it goes into anything that shares memory with an input"."""
import operator

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)


def _views_only(node):
    if node.op not in ("call_method", "call_function") or not node.args or not hasattr(node.args[0], "op"):
        return False
    if node.target is operator.getitem:
        return True
    if node.target is getattr:
        return len(node.args) > 1 and node.args[1] in _ref.VIEW_ATTRIBUTES
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    return name in _ref.VIEW_METHODS


_ref._aliases_its_first_argument = _views_only
