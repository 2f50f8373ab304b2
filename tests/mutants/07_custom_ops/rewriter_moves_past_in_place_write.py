"""Mistake (blind round 1's missing rule): only the grad-mode filter. The rewriter puts the fused op before the
GELU's first reader, so a write in place into the pair's input between the pair and that reader (t.mul_(0.5),
t += 1, t[0] = 0, F.relu(t, inplace=True)) now happens before the fused op reads t: the output changes."""
from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)


def fuse_with_rewriter(gm):
    from torch.fx.subgraph_rewriter import replace_pattern_with_filters

    fused = sum(len(replace_pattern_with_filters(gm, p, r, match_filters=[_ref.no_grad_mode_switch]))
                for p, r in _ref.REWRITES)
    gm.recompile()
    return fused


_ref.fuse_with_rewriter = fuse_with_rewriter
