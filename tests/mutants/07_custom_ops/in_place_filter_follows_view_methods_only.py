"""Mistake (mutation run after blind round 2): the in-place filter follows views made by methods (`t.view(-1)`,
`w.t()`) and by indexing, but not views made by torch functions. `torch.transpose(w, 0, 1).mul_(0.5)` between the
pair and the GELU's first reader writes into the weight all the same: the fused op, put after it, reads the
written weight."""
import operator

import torch

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)


def _views_of(inputs: set, graph: torch.fx.Graph) -> set:
    views = set(inputs)
    for node in graph.nodes:
        if node.args and node.args[0] in views and (
                node.target is operator.getitem or (node.op == "call_method" and node.target in _ref.VIEW_METHODS)):
            views.add(node)
    return views


_ref._views_of = _views_of
