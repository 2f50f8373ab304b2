"""Mistake: a hand-written pass (kata 3's, with its guard) that edits the graph but never calls gm.recompile(): the
graph says fused, the module still runs the code generated before the edit."""
import torch

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_fuses_every_form_dynamo_writes', 'rewriter_fuses_exactly_the_safe_pairs',
    'rewriter_moves_no_pair_past_a_switch_or_write', 'rewriter_respects_no_grad_blocks',
    'training_respects_no_grad_blocks')


def fuse_with_rewriter(gm):
    fused = 0
    for node in list(gm.graph.nodes):
        source = node.args[0] if node.op == "call_function" and node.target is torch._C._nn.gelu else None
        if getattr(source, "target", None) is torch._C._nn.linear and list(source.users) == [node]:
            x, w, *rest = source.args
            with gm.graph.inserting_before(node):
                new = gm.graph.call_function(_ref.linear_gelu._opoverload,
                                             (x, w, rest[0] if rest else None, node.kwargs.get("approximate", "none")))
            node.replace_all_uses_with(new)
            gm.graph.erase_node(node)
            gm.graph.erase_node(source)
            fused += 1
    return fused


_ref.fuse_with_rewriter = fuse_with_rewriter
