"""Mistake: legalise writes the views' sizes from the example (int() of each size): the batch is fixed to 3 in a
graph exported for any batch."""
from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('legalise_leaves_legal_graphs_alone', 'legalise_removes_aliases_and_reshapes',
    'lower_runs_each_npu_island_as_one_program', 'random_programs_lower_and_match_eager')
_ref._static_sizes = lambda node: [int(size) for size in node.meta["val"].shape]

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
