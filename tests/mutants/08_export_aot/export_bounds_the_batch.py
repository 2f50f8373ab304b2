"""Mistake (blind round k08-r6, w02_dim_max): each input's Dim gets a generous `max` ("no real batch is larger"). The
program then refuses every batch past it when it runs ("Guard failed: input.size()[0] <= 1024"). The lesson: "Give
no `max`, and no `min` above 2"; the checks ran batches of at most 8, so a max of 8 or more went unseen."""
import torch
from torch.export import Dim

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ("export_keeps_the_batch_dynamic",)


def export_for_npu(model, example_inputs):
    dims = tuple({0: Dim(f"batch{i}", max=1024)} for i in range(len(example_inputs)))
    ep = torch.export.export(model, tuple(example_inputs), dynamic_shapes=dims)
    return ep.run_decompositions(_ref.npu_decomposition_table())


_ref.export_for_npu = export_for_npu

npu_decomposition_table, legalise, is_npu_node = _ref.npu_decomposition_table, _ref.legalise, _ref.is_npu_node
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
