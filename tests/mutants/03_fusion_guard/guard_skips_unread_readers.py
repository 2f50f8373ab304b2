"""Mistake: a reader of the Linear's output that nobody reads is "dead code": it does not block the fusion, and is
erased when `Node.is_impure()` is False. An unread in-place op on z (`z.add_(1.0)`, a call_method in symbolic_trace
and Dynamo graphs, for which is_impure() is False) changes z before the GELU reads it: erasing it loses the +1. The
lesson: "an in-place op on `z` whose own result nobody reads ... is a reader too: it changes `z` before the GELU reads
it" (blind round k03-r4, wrong_guard_skips_dead_readers)."""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = ("linear_output_with_two_users_is_not_fused",)


def feeds_only(node, user):
    unread = [u for u in node.users if u is not user and not u.users and u.op != "output" and not u.is_impure()]
    if [u for u in node.users if u not in unread] != [user]:
        return False
    for reader in unread:  # "dead": erased so that the Linear can go
        node.graph.erase_node(reader)
    return True


_ref.feeds_only = feeds_only
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
