"""Mistake: GELU's `approximate` is not carried to the fused node.

The fused node is created as LINEAR_GELU(x, w, b), so it always computes the exact GELU. A model with
nn.GELU(approximate="tanh") now computes slightly different numbers (up to ~1e-3).
"""
import dataclasses

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")
_right_match_at = _ref.match_at

KILLED_BY = ("approximate_is_carried", "module_graphs_fuse", "dynamo_graphs_fuse", "export_graphs_fuse",
             "addmm_and_mm_fuse")


def match_at(gm, node):
    match = _right_match_at(gm, node)
    return None if match is None else dataclasses.replace(match, approximate="none")


_ref.match_at = match_at
fuse_linear_gelu = _ref.fuse_linear_gelu
