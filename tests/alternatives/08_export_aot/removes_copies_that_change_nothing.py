"""A correct attempt the lesson allows (blind round 2, wrong_same_dtype_copy_removed, right under the new lesson):
legalise also removes an `aten._to_copy` that changes nothing (the dtype, layout and device of its input, no
memory format: `h.to(torch.float32, copy=True)` of a float32 h), as a plain clone under another name, and counts
it. Its `_assert_tensor_metadata` stays. Lesson: "legalise **may** remove it (and count it) or keep it"."""
import torch

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
aten = torch.ops.aten
_reference_is_noop = _ref._is_noop


def _changes_nothing(node):
    if node.kwargs.get("memory_format") not in (None, torch.preserve_format):
        return False
    source, value = node.args[0].meta.get("val"), node.meta.get("val")
    return (isinstance(source, torch.Tensor) and isinstance(value, torch.Tensor)
            and (source.dtype, source.layout, source.device) == (value.dtype, value.layout, value.device))


def _is_noop(node):
    if node.target is aten._to_copy.default:
        return _changes_nothing(node)
    return _reference_is_noop(node)


_ref._is_noop = _is_noop

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
