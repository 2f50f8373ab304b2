"""Mistake (after blind round 2): every `_to_copy` that keeps the dtype is a plain copy, so legalise removes it,
memory format or not. `t.to(memory_format=torch.contiguous_format, copy=True)` after a transpose keeps the dtype
but makes the tensor contiguous, and the view after it is legal only on its output. Lesson: "legalise keeps every
cast (an `aten._to_copy` that changes the dtype, or names a memory format other than `preserve_format`, ...)"."""
import torch

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('legalise_leaves_legal_graphs_alone', 'legalise_removes_aliases_and_reshapes')
aten = torch.ops.aten
_reference_is_noop = _ref._is_noop


def _is_noop(node):
    if node.target is aten._to_copy.default:
        source, value = node.args[0].meta.get("val"), node.meta.get("val")
        return isinstance(source, torch.Tensor) and isinstance(value, torch.Tensor) and source.dtype == value.dtype
    return _reference_is_noop(node)


_ref._is_noop = _is_noop

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
