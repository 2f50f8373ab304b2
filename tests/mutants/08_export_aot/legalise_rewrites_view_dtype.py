"""Mistake (found in an earlier alternative by blind round 1's generator): legalise takes every overload of view
for a reshape, so aten.view.dtype (h.view(torch.int32): the same bytes as another dtype) becomes
aten.view.default with int sizes, and the int32 output comes out float32."""
import torch

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('legalise_removes_aliases_and_reshapes', 'random_programs_lower_and_match_eager')

_ref.RESHAPES = _ref.RESHAPES + (torch.ops.aten.view.dtype,)

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
