"""Mistake: CapabilityBasedPartitioner with its default allows_single_node_partition=False. A partition of one
compute node is silently dropped, so a lone supported op between two CPU ops (sin -> relu -> cumsum) runs on
the CPU."""
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = (
    "integer_work_stays_on_the_host",
    "lone_supported_op_runs_on_npu",
    "partitions_and_launches_match_reference",
    "real_models_keep_the_npu_busy_at_every_shape",
)


def partition_for_npu(gm):
    partitioner = CapabilityBasedPartitioner(gm, _ref._op_support.NPUOperatorSupport())
    return partitioner.partition_and_fuse(prefix=_ref.PARTITION_PREFIX)


_ref.partition_for_npu = partition_for_npu
