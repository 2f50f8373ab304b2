"""Mistake: is_npu_node reads only the op name: a float64 Linear goes to the NPU, which has no float64."""

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('is_npu_node_follows_the_device', 'lower_runs_each_npu_island_as_one_program',
    'random_mlps_lower_and_match_eager', 'random_programs_lower_and_match_eager',
    'saved_program_runs_in_a_fresh_process')


def is_npu_node(node):
    return node.op == "call_function" and _ref.canonical_name(node.target) in _ref.NPU_OPS


_ref.is_npu_node = is_npu_node

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
