"""Mistake (blind round 3, wrong_output_dtype_only): is_npu_node asks only that each input be a tensor, and judges
dtypes by the outputs: type promotion makes `h * scale` float32 even when `scale` is a 0-dim float64 (or int64)
buffer, so the node goes to the NPU, which cannot hold that input. Breaks "every input node's value
(`meta["val"]`) is a tensor of an NPU dtype"."""
import torch

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('is_npu_node_follows_the_device', 'lower_runs_each_npu_island_as_one_program',
    'random_programs_lower_and_match_eager', 'saved_program_runs_in_a_fresh_process')


def is_npu_node(node):
    if (node.op != "call_function" or _ref.canonical_name(node.target) not in _ref.NPU_OPS
            or not _ref._has_kernel(node.target)):
        return False
    if not all(isinstance(source.meta.get("val"), torch.Tensor) for source in node.all_input_nodes):
        return False
    outputs = _ref._tensor_values(node.meta.get("val"))
    return bool(outputs) and all(t.dtype in _ref.NPU_DTYPES for t in outputs)


_ref.is_npu_node = is_npu_node

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
