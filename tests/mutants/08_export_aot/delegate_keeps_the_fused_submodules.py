"""Mistake (blind round 1, wrong_delegate_keeps_submodules): the delegate erases each call_module node but never
delattr's its submodule: fused_0, ... stay on the graph module, called by nothing, saved with the program."""
from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('lower_runs_each_npu_island_as_one_program',
    'random_mlps_lower_and_match_eager',
    'random_programs_lower_and_match_eager')

_ref.delattr = lambda obj, name: None  # the reference's delattr(gm, call.target) now does nothing

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
