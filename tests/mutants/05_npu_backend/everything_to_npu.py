"""Mistake: no classification -- every compute node is declared NPU-supported and NPU.compile is left to sort
it out. It rejects each partition holding an op outside NPU_OPS (layer_norm, softmax, sin, ...), so the whole
partition, supported neighbours included, falls back to the CPU."""
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = (
    "every_dimension_is_part_of_the_signature",
    "injected_fault_reruns_that_call_on_cpu",
    "integer_work_stays_on_the_host",
    "lone_supported_op_runs_on_npu",
    "partitions_and_launches_match_reference",
    "random_mlps_with_cpu_ops",
    "real_models_keep_the_npu_busy_at_every_shape",
    "training_steps_match_eager",
    "unsupported_ops_stay_on_cpu",
)


class EverythingSupported(OperatorSupportBase):
    def is_node_supported(self, submodules, node):
        return node.op in ("call_function", "call_method", "call_module")


def partition_for_npu(gm):
    partitioner = CapabilityBasedPartitioner(gm, EverythingSupported(), allows_single_node_partition=True)
    return partitioner.partition_and_fuse(prefix=_ref.PARTITION_PREFIX)


_ref.partition_for_npu = partition_for_npu
