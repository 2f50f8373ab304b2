"""Mistake: the fused node's recorded value is made anew from the replaced node's shape, as
`torch.empty(shape, device="meta")`, on the idea that later passes only read the shape from it. A tensor made anew
gets torch's default dtype, float32: in a float64 or float16 graph the fused node then records the wrong dtype
(blind round k03-r2, wrong_meta_default_dtype)."""
import torch

from checker.kit import load_reference

_ref = load_reference("03_fusion_guard", "fusion.py")

KILLED_BY = (
    "fused_nodes_record_their_value",
    "random_mlps_as_aten_graphs",
    "random_mlps_as_decomposed_graphs",
    "random_mlps_as_torch_graphs",
    "random_pair_programs",
)

_rewrite = _ref.rewrite


def rewrite(gm, match):
    fused = _rewrite(gm, match)
    for key in ("val", "example_value"):
        if isinstance(fused.meta.get(key), torch.Tensor):
            fused.meta[key] = torch.empty(tuple(fused.meta[key].shape), device="meta")
    return fused


_ref.rewrite = rewrite
fuse_linear_gelu = _ref.fuse_linear_gelu
unfused_pairs = _ref.unfused_pairs
