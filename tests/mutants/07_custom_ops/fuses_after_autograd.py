"""Mistake: the backend fuses in aot_autograd's forward compiler, after the split: the forward graph is aten ops and
returns the pre-GELU value for the backward, so nothing matches and training runs unfused."""
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('training_handles_a_new_batch_size', 'training_matches_eager', 'training_runs_fused_forward_and_backward')


def _fuse_then_run(gm, example_inputs):
    _ref.fuse_with_rewriter(gm)
    return make_boxed_func(gm.forward)


def npu_training_backend(gm, example_inputs):
    return aot_autograd(fw_compiler=_fuse_then_run, bw_compiler=_ref._run_graph)(gm, example_inputs)
