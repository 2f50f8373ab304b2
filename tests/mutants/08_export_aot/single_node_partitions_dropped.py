"""Mistake: CapabilityBasedPartitioner with its default allows_single_node_partition=False: an NPU op alone
between CPU ops (the last Linear after a LayerNorm) stays on the CPU."""
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('lower_runs_each_npu_island_as_one_program', 'random_mlps_lower_and_match_eager',
    'random_programs_lower_and_match_eager', 'saved_program_runs_in_a_fresh_process')


class _DefaultPartitioner(CapabilityBasedPartitioner):
    def __init__(self, gm, support, **_):
        super().__init__(gm, support)


_ref.CapabilityBasedPartitioner = _DefaultPartitioner

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
