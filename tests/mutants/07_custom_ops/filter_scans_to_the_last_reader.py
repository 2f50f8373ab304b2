"""Mistake (blind round 1): the grad-mode filter looks for a switch up to the LAST reader of the GELU's output ("the
value must be right for every reader"). The replacement goes before the FIRST reader: a pair inside a no_grad block
whose first reader is in the block and another after it is safe, and this filter refuses it."""
import torch

from checker.kit import load_reference

_ref = load_reference("07_custom_ops", "vendor_op.py")
linear_gelu, linear_gelu_backward, linear_gelu_out = _ref.linear_gelu, _ref.linear_gelu_backward, _ref.linear_gelu_out
fuse_with_rewriter, npu_training_backend = _ref.fuse_with_rewriter, _ref.npu_training_backend

KILLED_BY = ('rewriter_moves_no_pair_past_a_switch_or_write',)


def _to_last_reader(match, graph, pattern):
    order = {node: i for i, node in enumerate(graph.nodes)}
    matched = [n for n in match.nodes_map.values() if n not in match.placeholder_nodes]
    readers = [user for node in match.returning_nodes for user in node.users]
    start, stop = min(order[n] for n in matched), max(order[u] for u in readers)
    return not any(start < order[n] < stop and n.target in _ref.GRAD_MODE_SWITCHES for n in graph.nodes)


def fuse_with_rewriter(gm):
    from torch.fx.subgraph_rewriter import replace_pattern_with_filters

    fused = sum(len(replace_pattern_with_filters(gm, p, r, match_filters=[_to_last_reader, _ref.no_in_place_write]))
                for p, r in _ref.REWRITES)
    gm.recompile()
    return fused


_ref.fuse_with_rewriter = fuse_with_rewriter
