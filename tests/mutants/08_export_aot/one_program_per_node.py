"""Mistake: every NPU node becomes a program of its own (one partition per node): correct numbers, but each
program is a launch and a copy of its inputs to the device."""
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner, Partition

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('lower_runs_each_npu_island_as_one_program',)


class _OnePerNode(CapabilityBasedPartitioner):
    def propose_partitions(self):
        return [Partition(id=i, nodes=[node]) for i, node in enumerate(
            n for partition in super().propose_partitions() for n in partition.nodes)]


_ref.CapabilityBasedPartitioner = _OnePerNode

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
