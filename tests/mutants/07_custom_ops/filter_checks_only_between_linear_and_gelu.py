"""Mistake: the filter looks for a grad-mode switch between the Linear and the GELU only; the replacement goes
before the GELU's first reader, which may lie past the end of the no_grad block."""
from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write', 'rewriter_respects_no_grad_blocks',
    'training_respects_no_grad_blocks')


def _no_switch_inside_match(match, graph, pattern):
    matched = {n for n in match.nodes_map.values() if n not in match.placeholder_nodes}
    order = [n for n in graph.nodes]
    positions = [order.index(n) for n in matched]
    between = order[min(positions):max(positions) + 1]
    return not any(n.op == "call_function" and n.target in _ref.GRAD_MODE_SWITCHES for n in between)


def fuse_with_rewriter(gm):
    from torch.fx.subgraph_rewriter import replace_pattern_with_filters

    fused = sum(len(replace_pattern_with_filters(gm, p, r, match_filters=[_no_switch_inside_match]))
                for p, r in _ref.REWRITES)
    gm.recompile()
    return fused


_ref.fuse_with_rewriter = fuse_with_rewriter
