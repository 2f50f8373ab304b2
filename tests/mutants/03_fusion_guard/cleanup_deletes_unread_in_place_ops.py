"""Mistake: clean up with graph.eliminate_dead_code() as it is, trusting it to delete only what is dead.

Breaks the lesson's "nodes the capture already left without users may be deleted or kept if they have no side
effects (an unread in-place op such as `h.add_(1.0)` stays)": on torch 2.13 eliminate_dead_code() deletes an unread
in-place call_method (Node.is_impure() is False for it) in symbolic_trace and Dynamo graphs, and the graph then
computes something else."""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = ("linear_output_with_two_users_is_not_fused", "nodes_outside_matches_untouched")

_fuse = _ref.fuse_linear_gelu


def fuse_linear_gelu(gm):
    fused = _fuse(gm)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return fused


unfused_pairs = _ref.unfused_pairs
