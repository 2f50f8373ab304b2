"""Mistake: the filter refuses a pair whose Linear output needs no gradient (example_value.requires_grad is False):
pairs computed inside a no_grad block are never fused, even where the block holds their reader too; and a pair
with its reader inside the block is still fused past the switch."""
from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write', 'rewriter_respects_no_grad_blocks')


def _needs_grad(match, graph, pattern):
    matched = [n for n in match.nodes_map.values() if n not in match.placeholder_nodes]
    return all(getattr(n.meta.get("example_value"), "requires_grad", False) for n in matched)


def fuse_with_rewriter(gm):
    from torch.fx.subgraph_rewriter import replace_pattern_with_filters

    fused = sum(len(replace_pattern_with_filters(gm, p, r, match_filters=[_needs_grad])) for p, r in _ref.REWRITES)
    gm.recompile()
    return fused


_ref.fuse_with_rewriter = fuse_with_rewriter
