"""Mistake: the backward uses the op's output as if it were the pre-GELU value: setup_context saves the output and
the backward kernel takes gelu'(output). The fused op never stored the pre-GELU value; it must be recomputed."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('backward_keeps_each_calls_state', 'backward_runs_the_backward_op', 'gradients_match_eager',
    'rewriter_fuses_every_form_dynamo_writes', 'rewriter_fuses_exactly_the_safe_pairs',
    'rewriter_moves_no_pair_past_a_switch_or_write', 'rewriter_respects_no_grad_blocks',
    'training_handles_a_new_batch_size', 'training_matches_eager', 'training_runs_fused_forward_and_backward')


def _setup_context(ctx, inputs, output):
    x, weight, bias, approximate = inputs
    ctx.save_for_backward(x, weight, output)
    ctx.approximate, ctx.has_bias = approximate, bias is not None


def _backward(ctx, grad):
    x, weight, output = ctx.saved_tensors
    grad_pre = torch.ops.aten.gelu_backward(grad, output, approximate=ctx.approximate)
    rows = grad_pre.reshape(-1, grad_pre.shape[-1])
    return grad_pre @ weight, rows.t() @ x.reshape(-1, x.shape[-1]), rows.sum(0) if ctx.has_bias else None, None


_ref.linear_gelu.register_autograd(_backward, setup_context=_setup_context)
