"""Mistake: no legalisation, but the whole ATen graph is fused before partitioning (the order the lesson used to
accept as an alternative). Fusion swallows the `_unsafe_view` between a bias-free Linear and its GELU, so for
that pair the counts look right; but the `_unsafe_view` after the last Linear still runs on the host, and
without a GELU to fuse (a bias-free Linear -> ReLU) the NPU work is cut in two programs with a host round trip
between them."""
from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("layout_ops_do_not_split_partitions", "random_mlps_with_cpu_ops")


def legalize_for_npu(gm):
    return _ref._fusion.fuse_linear_gelu(gm)  # fusing the whole graph first; nothing legalised


_ref.legalize_for_npu = legalize_for_npu
