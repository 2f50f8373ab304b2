"""Mistake (hint 2's code before blind round 1): every input's dimension 0 gets Dim("batch"), one name, so one
symbol: the inputs must share a batch, and export refuses a model whose two inputs have 3 and 5 rows."""
import torch
from torch.export import Dim

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('export_keeps_the_batch_dynamic',
    'lower_runs_each_npu_island_as_one_program',
    'random_programs_lower_and_match_eager')


def export_for_npu(model, example_inputs):
    dims = tuple({0: Dim("batch")} for _ in example_inputs)
    ep = torch.export.export(model, tuple(example_inputs), dynamic_shapes=dims)
    return ep.run_decompositions(_ref.npu_decomposition_table())


_ref.export_for_npu = export_for_npu

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
