"""Mistake: legalise removes aliases and clones but leaves unsqueeze, squeeze and views sized by sym_size: the
NPU runs none of them, so they split the model into several programs."""
from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('legalise_removes_aliases_and_reshapes', 'lower_runs_each_npu_island_as_one_program')
_ref.RESHAPES = ()

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
