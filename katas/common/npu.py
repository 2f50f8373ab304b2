"""The simulated NPU: which ops it runs (NPU_OPS). Katas 4 and 5 read this file; it is the ground truth.

NPU_OPS holds canonical op names: the ATen op each node becomes, without namespace or overload
(`aten.addmm.default` -> "addmm", nn.Linear / F.linear / aten.linear -> "linear"). Everything else runs
on the CPU.
"""
from __future__ import annotations

NPU_OPS = frozenset({
    "linear", "addmm", "mm", "matmul", "t", "permute", "transpose", "view", "reshape",
    "gelu", "relu", "sigmoid", "tanh", "silu", "add", "mul", "linear_gelu",
})
