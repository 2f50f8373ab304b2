"""Mistake: is_npu_node checks the dtype of the node's first input only (the activation of `h * scale`), as if
the other operands were weights or scalars of the same dtype. `h * scale` with a 0-dim float64 buffer as the
second input goes to the NPU. Breaks "every input node's value (`meta["val"]`) is a tensor of an NPU dtype"."""
import torch

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('is_npu_node_follows_the_device', 'lower_runs_each_npu_island_as_one_program',
    'random_programs_lower_and_match_eager', 'saved_program_runs_in_a_fresh_process')


def is_npu_node(node):
    if (node.op != "call_function" or _ref.canonical_name(node.target) not in _ref.NPU_OPS
            or not _ref._has_kernel(node.target)):
        return False
    sources = node.all_input_nodes
    if not all(isinstance(source.meta.get("val"), torch.Tensor) for source in sources):
        return False
    if sources and sources[0].meta["val"].dtype not in _ref.NPU_DTYPES:
        return False
    outputs = _ref._tensor_values(node.meta.get("val"))
    return bool(outputs) and all(t.dtype in _ref.NPU_DTYPES for t in outputs)


_ref.is_npu_node = is_npu_node

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
