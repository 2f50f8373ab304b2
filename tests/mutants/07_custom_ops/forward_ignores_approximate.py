"""Mistake: the kernel always computes the exact GELU, whatever `approximate` says."""
import torch
import torch.nn.functional as F

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('backward_keeps_each_calls_state', 'forward_op_computes_linear_gelu', 'gradients_match_eager',
             'rewriter_fuses_every_form_dynamo_writes', 'rewriter_moves_no_pair_past_a_switch_or_write',
             'training_handles_a_new_batch_size')


@torch.library.custom_op("npu_mutant_no_tanh::linear_gelu", mutates_args=())
def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                approximate: str = "none") -> torch.Tensor:
    return F.gelu(F.linear(x, weight, bias))


linear_gelu.register_fake(_ref._linear_gelu_fake)
linear_gelu.register_autograd(_ref._backward, setup_context=_ref._setup_context)
_ref.linear_gelu = linear_gelu
