"""Mistake: the report's guard counts the readers of the Linear's product only, not of the view between it and the
GELU; in a decomposed graph of a 3-D input, two GELUs of one Linear read the same view (the product has one reader,
the view two), and both are reported "safe". The lesson: "reads a Linear whose output, or the view of it the GELU
reads, has another reader".
"""
from torch.fx import Node

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")


def why_not_fused(gm, gelu):
    source = gelu.args[0] if gelu.args else None
    if isinstance(source, Node) and _ref.is_reshape(source) and isinstance(source.args[0], Node):
        source = source.args[0]
    if not isinstance(source, Node) or _ref.linear_operands(gm, source) is None:
        return "not_a_linear"
    return "safe" if len(source.users) == 1 else "other_readers"


_ref.why_not_fused = why_not_fused
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs

KILLED_BY = ("report_after_a_pass_leaves_out_the_fused_pairs", "report_gives_each_gelu_its_reason")
