"""Mistake: the graph is rewritten but its signature is not: it still names the old output node (and the
placeholder the partitioner renamed), so torch.export.save refuses the program."""
from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('random_programs_lower_and_match_eager', 'saved_program_runs_in_a_fresh_process')
_ref._sync_signature = lambda ep: None

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
