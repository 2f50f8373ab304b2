"""Mistake: silent fallback. Rejected partitions and failed calls do run on the CPU -- so every answer is right --
but nothing tells the user, who goes on believing the NPU ran their model."""
import torch.fx

from checker.kit import load_reference
from katas.common.npu import NPU, NPUCompileError, NPURuntimeError

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("float64_falls_back_loudly", "injected_fault_reruns_that_call_on_cpu", "new_batch_size_still_correct")


def lower_partition(parent: torch.fx.GraphModule, call: torch.fx.Node) -> None:
    partition = parent.get_submodule(call.target)
    _ref._fusion.fuse_linear_gelu(partition)
    try:
        program = NPU.compile(partition, [arg.meta.get("val") for arg in call.args], name=call.target)
    except NPUCompileError:
        return  # stays on the CPU, and nobody hears about it
    setattr(parent, call.target, _ref.NPUPartition(call.target, program, partition))


def forward(self, *args):
    try:
        return self.program(*args)
    except NPURuntimeError:
        return self.on_cpu(*args)


_ref.lower_partition = lower_partition
_ref.NPUPartition.forward = forward
