"""Mistake: torch's default decomposition table as it is: silu becomes sigmoid and mul (two NPU launches instead
of one), linear becomes permute and addmm."""
import torch
from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('exported_graphs_are_core_aten_plus_npu_ops', 'lower_runs_each_npu_island_as_one_program',
    'saved_program_runs_in_a_fresh_process', 'table_decomposes_all_but_what_the_npu_runs')


def npu_decomposition_table():
    return torch.export.default_decompositions()


_ref.npu_decomposition_table = npu_decomposition_table

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
