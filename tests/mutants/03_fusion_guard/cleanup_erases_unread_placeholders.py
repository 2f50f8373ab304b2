"""Mistake: clean-up erases every node left without users, placeholders included ("a parameter nobody reads any more
is dead weight"). Dynamo with dynamic=True passes each symbolic size in as a placeholder that nothing reads, and
aot_autograd's size placeholders go unread once the views are gone: the graph's caller still passes every input, so
the rewritten graph no longer runs (blind round k03-r2, wrong_erase_placeholders)."""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = ("symbolic_batch_view_sandwich_fuses",)

_fuse = _ref.fuse_linear_gelu


def fuse_linear_gelu(gm):
    count = _fuse(gm)
    changed = True
    while changed:
        changed = False
        for node in reversed(list(gm.graph.nodes)):
            if node.op == "placeholder" and not node.users:
                gm.graph.erase_node(node)
                changed = True
    gm.recompile()
    return count


unfused_pairs = _ref.unfused_pairs
