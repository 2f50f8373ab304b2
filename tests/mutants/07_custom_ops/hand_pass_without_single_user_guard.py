"""Mistake: a hand-written pass in place of the rewriter, fusing every linear -> gelu pair of the Dynamo graph without
kata 3's guard: a residual or returned z is handed the fused output."""
import torch

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_fuses_every_form_dynamo_writes', 'rewriter_fuses_exactly_the_safe_pairs',
    'rewriter_leaves_shared_linear_outputs', 'rewriter_moves_no_pair_past_a_switch_or_write',
    'rewriter_respects_no_grad_blocks', 'training_handles_a_new_batch_size', 'training_matches_eager',
    'training_respects_no_grad_blocks', 'training_runs_fused_forward_and_backward')


def fuse_with_rewriter(gm):
    fused = 0
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is torch._C._nn.gelu:
            source = node.args[0]
            if getattr(source, "target", None) is torch._C._nn.linear:
                x, w, *rest = source.args
                with gm.graph.inserting_before(node):
                    bias, approximate = rest[0] if rest else None, node.kwargs.get("approximate", "none")
                new = gm.graph.call_function(_ref.linear_gelu._opoverload, (x, w, bias, approximate))
                node.replace_all_uses_with(new)
                source.replace_all_uses_with(new)
                gm.graph.erase_node(node)
                gm.graph.erase_node(source)
                fused += 1
    gm.recompile()
    return fused


_ref.fuse_with_rewriter = fuse_with_rewriter
