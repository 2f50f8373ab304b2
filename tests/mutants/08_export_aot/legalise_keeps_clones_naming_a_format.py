"""Mistake (blind round 2, wrong_clone_any_format_stays): a clone that names any memory_format changes the layout
and stays; only a bare `h.clone()` is removed. `h.clone(memory_format=torch.preserve_format)` is the default
spelled out: a plain clone, left on the CPU where it splits an NPU island. Lesson: "A **plain clone** names no
memory format, or `torch.preserve_format` (the default, spelled out)"."""
import torch

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('legalise_removes_aliases_and_reshapes',)
aten = torch.ops.aten


def _is_noop(node):
    if node.target is aten.alias.default:
        return True
    if node.target is aten.clone.default:
        return "memory_format" not in node.kwargs
    return node.target is aten.slice.Tensor and _ref._is_full_slice(node)


_ref._is_noop = _is_noop

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
