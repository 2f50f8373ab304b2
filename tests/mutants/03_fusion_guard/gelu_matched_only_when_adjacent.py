"""Mistake: captures emit the GELU right after its Linear (and the view right after the product), so a pair is
matched only when the nodes are neighbours in graph order (`linear.next is gelu`).

Breaks the lesson's "The pattern is a data edge (`gelu.args[0]` is the Linear), not node order: ... unrelated nodes
may sit between the Linear, its view and the GELU". Every capture records nodes in the order the model runs them:
in `z = fc(x); s = sigmoid(x).sum(); gelu(z) * s` the sigmoid and the sum sit between fc and the GELU."""
from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = ("random_pair_programs", "symbolic_batch_view_sandwich_fuses", "unrelated_nodes_between_linear_and_gelu")

_match_at = _ref.match_at


def match_at(gm, node):
    match = _match_at(gm, node)
    if match is None:
        return None
    if match.linear.next is not (match.reshape or match.gelu):
        return None
    if match.reshape is not None and match.reshape.next is not match.gelu:
        return None
    return match


_ref.match_at = match_at
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
