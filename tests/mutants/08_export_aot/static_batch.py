"""Mistake: export without dynamic_shapes: the program is specialised to the example's batch size."""
import torch
from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('export_keeps_the_batch_dynamic', 'lower_runs_each_npu_island_as_one_program',
    'random_mlps_lower_and_match_eager', 'random_programs_lower_and_match_eager',
    'saved_program_runs_in_a_fresh_process', 'weights_stay_inputs_of_the_program')


def export_for_npu(model, example_inputs):
    ep = torch.export.export(model, tuple(example_inputs))
    return ep.run_decompositions(_ref.npu_decomposition_table())


_ref.export_for_npu = export_for_npu

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
