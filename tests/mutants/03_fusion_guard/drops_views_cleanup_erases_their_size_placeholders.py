"""Mistake: a pass that drops the view sandwich cleans up by following each erased node to its inputs and erasing
whatever is left unread, placeholders included. aot_autograd under dynamic=True passes the batch sizes in as
placeholders that only the views' size arithmetic reads: once the views are gone they are unread, and erased, and the
graph no longer takes the arguments its caller passes. "Placeholders are never deleted, not even one nothing reads"
(blind round k03-r7, w17_unread_placeholder_erased: the learner profile captured no such graph)."""
from pathlib import Path

from checker.kit import load_module

_drops_views = load_module(Path(__file__).with_name("drops_views_leaves_size_arithmetic.py"),
                           "kata03_mutant_drops_views_for_placeholders")


def _erase_if_dead(graph, nodes):
    """Erase what the rewrite left unread, and in turn every input that became unread -- placeholders too."""
    todo = list(nodes)
    while todo:
        n = todo.pop()
        if n.graph is not graph or n.users or n.op not in ("call_function", "placeholder"):
            continue
        if n.op == "call_function" and n.is_impure() or getattr(n, "_erased", False):
            continue
        inputs = list(n.all_input_nodes)
        graph.erase_node(n)
        n._erased = True
        todo.extend(inputs)


_drops_views._erase_if_dead = _erase_if_dead
fuse_linear_gelu = _drops_views.fuse_linear_gelu
unfused_pairs = _drops_views.unfused_pairs

KILLED_BY = ("symbolic_batch_view_sandwich_fuses",)
