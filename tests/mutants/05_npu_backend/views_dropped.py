"""Mistake: "legalising" `_unsafe_view` by deleting it: its users read its input instead. The partition is one
NPU program, but the tensor keeps the flattened shape: the model returns (10, 3) where eager returns (2, 5, 3)."""
import torch

from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = (
    "layout_ops_do_not_split_partitions",
    "random_mlps_with_cpu_ops",
    "real_models_keep_the_npu_busy_at_every_shape",
)


def legalize_for_npu(gm):
    count = 0
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is torch.ops.aten._unsafe_view.default:
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
            count += 1
    gm.recompile()
    return count


_ref.legalize_for_npu = legalize_for_npu
