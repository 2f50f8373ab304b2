"""Mistake (issue 33, the reference before blind round 1): legalise removes clone(memory_format=
torch.contiguous_format) as if it were its input. In attention's o.transpose(1, 2).reshape(B, N, C) that clone
is what makes the next view legal: without it the view reads a transposed tensor and fails."""
import torch

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('legalise_removes_aliases_and_reshapes',
    'lower_runs_each_npu_island_as_one_program',
    'random_programs_lower_and_match_eager')
aten = torch.ops.aten


def _is_noop(node):
    if node.target in (aten.alias.default, aten.clone.default):
        return node.kwargs.get("memory_format") in (None, torch.contiguous_format, torch.preserve_format)
    return node.target is aten.slice.Tensor and _ref._is_full_slice(node)


_ref._is_noop = _is_noop

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
