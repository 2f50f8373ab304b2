"""Mistake (blind round 1, wrong_export_first_input_dynamic): only the first input's batch is dynamic; the other
inputs are taken for fixed-size side inputs. A model of two inputs with independent batches then accepts only the
example's batch for its second input."""
import torch
from torch.export import Dim

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('export_keeps_the_batch_dynamic',
    'lower_runs_each_npu_island_as_one_program',
    'random_programs_lower_and_match_eager')


def export_for_npu(model, example_inputs):
    dims = tuple({0: Dim("batch")} if i == 0 else None for i in range(len(example_inputs)))
    ep = torch.export.export(model, tuple(example_inputs), dynamic_shapes=dims)
    return ep.run_decompositions(_ref.npu_decomposition_table())


_ref.export_for_npu = export_for_npu

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
