"""Mistake: every aten.slice is taken for an alias and removed, also h[:, :6], h[:, 1:] and h[:, ::2], which keep
only part of their input."""
import torch

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('legalise_leaves_legal_graphs_alone', 'legalise_removes_aliases_and_reshapes',
             'random_programs_lower_and_match_eager')
_noop = _ref._is_noop


def _is_noop(node):
    return node.target is torch.ops.aten.slice.Tensor or _noop(node)


_ref._is_noop = _is_noop

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
