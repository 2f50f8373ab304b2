"""A correct attempt the lesson allows (blind round 4's fix): legalise also removes a clone naming a memory format
its input already has (`x.clone(memory_format=torch.contiguous_format)` of a contiguous x: the output's strides are
the input's), and counts it; a clone whose input is in another layout (a transposed or permuted tensor) stays.
Lesson: "A clone naming the memory format its input already has ... changes nothing either: legalise **may**
remove it (and count it) or keep it"."""
import torch

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
aten = torch.ops.aten
_reference_is_noop = _ref._is_noop


def _is_noop(node):
    memory_format = node.kwargs.get("memory_format")
    if node.target is aten.clone.default and memory_format not in (None, torch.preserve_format):
        source = node.args[0].meta.get("val")
        return isinstance(source, torch.Tensor) and source.is_contiguous(memory_format=memory_format)
    return _reference_is_noop(node)


_ref._is_noop = _is_noop

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
