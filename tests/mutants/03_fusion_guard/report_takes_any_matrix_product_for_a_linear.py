"""Mistake: in the report, any addmm/mm is a Linear, whatever its weight, so GPT-2's Conv1D (an `[in, out]` weight,
not transposed) followed by a GELU node is reported "safe" -- a pair a pass supposedly missed. The lesson: a GELU that
"reads anything else: ..., GPT-2's `Conv1D` (`addmm` with an untransposed `[in, out]` weight)" is "not_a_linear".
"""
import torch
from torch.fx import Node

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
aten = torch.ops.aten
_right_why = _ref.why_not_fused


def why_not_fused(gm, gelu):
    source = gelu.args[0] if gelu.args else None
    if isinstance(source, Node) and _ref.is_reshape(source) and isinstance(source.args[0], Node):
        source = source.args[0]
    if isinstance(source, Node) and source.op == "call_function" and source.target in (aten.addmm.default,
                                                                                       aten.mm.default):
        view = gelu.args[0]
        only = list(source.users) == [view] and (view is source or list(view.users) == [gelu])
        return "safe" if only else "other_readers"
    return _right_why(gm, gelu)


_ref.why_not_fused = why_not_fused
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs

KILLED_BY = ("report_after_a_pass_leaves_out_the_fused_pairs", "report_gives_each_gelu_its_reason")
