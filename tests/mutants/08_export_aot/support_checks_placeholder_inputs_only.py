"""Mistake: is_npu_node checks the dtypes of the inputs that are placeholders (the model's inputs, parameters,
buffers, constants), trusting that a node's result has the dtype of the ops before it. A float64 made inside the
graph (`h.mean().double()`) or an int64 index (`torch.arange(8)`) read by a float32 op goes to the NPU. Breaks
"every input node's value (`meta["val"]`) is a tensor of an NPU dtype"."""
import torch

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('is_npu_node_follows_the_device', 'lower_runs_each_npu_island_as_one_program',
    'saved_program_runs_in_a_fresh_process')


def is_npu_node(node):
    if (node.op != "call_function" or _ref.canonical_name(node.target) not in _ref.NPU_OPS
            or not _ref._has_kernel(node.target)):
        return False
    for source in node.all_input_nodes:
        value = source.meta.get("val")
        if not isinstance(value, torch.Tensor):
            return False
        if source.op == "placeholder" and value.dtype not in _ref.NPU_DTYPES:
            return False
    outputs = _ref._tensor_values(node.meta.get("val"))
    return bool(outputs) and all(t.dtype in _ref.NPU_DTYPES for t in outputs)


_ref.is_npu_node = is_npu_node

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
