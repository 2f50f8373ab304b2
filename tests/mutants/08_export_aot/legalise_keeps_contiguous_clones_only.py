"""Mistake (blind round 4, wrong_08_channels_last_clone): only a clone naming torch.contiguous_format (attention's)
sets a layout; a clone naming any other memory format is a plain clone, so legalise removes it.
`h.transpose(2, 3).contiguous(memory_format=torch.channels_last).view(B, 2, -1)` exports as
clone(transpose, memory_format=torch.channels_last) then a view that is legal only on the clone's output: without
it the view raises "Cannot view a tensor ...". Lesson: "A clone that names another memory format is not its input
under another name: it sets its output's strides, and it stays" and "`torch.channels_last` stays for the same
reason"."""
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
        return node.kwargs.get("memory_format") is not torch.contiguous_format
    return node.target is aten.slice.Tensor and _ref._is_full_slice(node)


_ref._is_noop = _is_noop

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
