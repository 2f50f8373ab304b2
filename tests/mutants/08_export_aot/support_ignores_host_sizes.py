"""Mistake: is_npu_node checks dtypes but not whether an input is a size computed on the host (a SymInt from
aten.sym_size): such a view would need the host's value inside the NPU program."""
import torch
from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('is_npu_node_follows_the_device',)


def is_npu_node(node):
    if node.op != "call_function" or _ref.canonical_name(node.target) not in _ref.NPU_OPS:
        return False
    values = [s.meta.get("val") for s in node.all_input_nodes] + _ref._tensor_values(node.meta.get("val"))
    return all(v.dtype in _ref.NPU_DTYPES for v in values if isinstance(v, torch.Tensor))


_ref.is_npu_node = is_npu_node

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
