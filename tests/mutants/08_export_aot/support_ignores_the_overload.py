"""Mistake (the lesson before blind round 1): is_npu_node asks only whether the op's canonical name is in NPU_OPS,
not whether the NPU's kernel takes this overload. aten.view.dtype(x, torch.float16) is named view, reads and makes
NPU dtypes, and NPU.compile refuses it."""
from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('is_npu_node_follows_the_device',)

_ref._has_kernel = lambda target: True

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
