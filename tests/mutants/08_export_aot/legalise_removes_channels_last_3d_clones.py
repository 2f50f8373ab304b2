"""Mistake (after blind round 4): the memory formats that set a layout are a list to learn, contiguous_format and
channels_last; any other (channels_last_3d) is taken for a plain clone and removed. A 5-D
`.permute(...).contiguous(memory_format=torch.channels_last_3d).view(B, 2, -1)` then views the permuted tensor and
raises "Cannot view a tensor ...". Lesson: "A **plain clone** names no memory format, or `torch.preserve_format`"
and "A clone that names another memory format is not its input under another name: it sets its output's strides,
and it stays"."""
import torch

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('legalise_leaves_legal_graphs_alone', 'legalise_removes_aliases_and_reshapes',
    'lower_runs_each_npu_island_as_one_program')
aten = torch.ops.aten


def _is_noop(node):
    if node.target is aten.alias.default:
        return True
    if node.target is aten.clone.default:
        return node.kwargs.get("memory_format") not in (torch.contiguous_format, torch.channels_last)
    return node.target is aten.slice.Tensor and _ref._is_full_slice(node)


_ref._is_noop = _is_noop

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
