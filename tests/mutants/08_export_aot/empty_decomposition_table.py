"""Mistake: an empty decomposition table "so that nothing the NPU runs is decomposed": non-core ops the NPU does
not run (layer_norm, flatten's reshape) stay in the graph too."""

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('exported_graphs_are_core_aten_plus_npu_ops', 'table_decomposes_all_but_what_the_npu_runs')


def npu_decomposition_table():
    return {}


_ref.npu_decomposition_table = npu_decomposition_table

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
