"""Kata 5 — a torch.compile backend for the simulated NPU. This is the only file you edit for this kata.

Read katas/05_npu_backend/README.md first: it describes the NPU, the pipeline and every edge case.
Check your work with `make kata N=5`; ask for a hint with `make hint N=5`.

Only `npu_backend` and its registration under the name "kata_npu" are checked. The other functions below are
the suggested pieces (the README's "The pipeline" walks through them); change them as you like.
"""
from __future__ import annotations

import warnings  # noqa: F401 - you will warn with NPUFallbackWarning
from typing import Any, Callable, Sequence

import torch
import torch.fx

from katas.common.learner import your_kata
from katas.common.npu import (  # noqa: F401 - the simulated NPU, see README.md "The simulated NPU"
    DEVICE,
    NPU,
    NPUCompileError,
    NPUFallbackWarning,
    NPUProgram,
    NPURuntimeError,
)

# Your own solutions of katas 3 and 4 (README.md, "Building blocks"):
fusion = your_kata("03_fusion_guard", "fusion.py")  # fusion.fuse_linear_gelu(gm) -> int
op_support = your_kata("04_op_support", "op_support.py")  # op_support.NPUOperatorSupport(), op_support.classify(gm)


def npu_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """A torch.compile backend: return a callable that computes what `gm` computes, on the NPU where it can.

    Dynamo calls it once per graph it captures. `gm` is a Dynamo graph (torch-level calls such as
    torch._C._nn.linear; the model's parameters are extra placeholders) and `example_inputs` are its real
    inputs, in placeholder order. The callable you return is called with inputs like these and must return
    what `gm(*inputs)` returns.

    - Lower to ATen, classify with your kata 4 support, partition, fuse Linear -> GELU (kata 3) inside each
      NPU partition, compile each NPU partition with NPU.compile, and run everything else on the CPU.
    - A partition NPU.compile rejects (NPUCompileError: float64, a symbolic shape) runs on the CPU, with an
      NPUFallbackWarning naming the partition or node and the reason.
    - A program call that raises NPURuntimeError (a device fault, a shape it was not compiled for) reruns that
      partition on the CPU for that call only, with an NPUFallbackWarning; later calls use the NPU again.
    - Under autograd, outputs and gradients match eager.

    See README.md, "The pipeline".
    """
    raise NotImplementedError("npu_backend: lower, partition, fuse, compile, return a callable — README.md, 'The pipeline'")


def compile_for_npu(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """Given an ATen graph (what aot_autograd hands its fw_compiler), return a runnable version of it whose
    NPU partitions run as NPUPrograms. See README.md, "The pipeline", steps 2-4."""
    raise NotImplementedError("compile_for_npu: partition an ATen graph and compile its NPU parts — README.md, 'The pipeline'")


def partition_for_npu(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Move each maximal group of NPU-supported nodes of `gm` into a submodule; the rest stays in `gm`.
    See README.md, "The pipeline", step 2."""
    raise NotImplementedError("partition_for_npu: CapabilityBasedPartitioner with your kata 4 support — README.md, 'The pipeline'")


class NPUPartition(torch.nn.Module):
    """One NPU partition at run time: calls its NPUProgram; for a call that raises NPURuntimeError, warns and
    runs `on_cpu` (the partition's own GraphModule) instead. See README.md, "Falling back"."""

    def __init__(self, name: str, program: NPUProgram, on_cpu: torch.fx.GraphModule) -> None:
        super().__init__()
        self.name = name
        self.program = program
        self.on_cpu = on_cpu  # not `self.cpu`: nn.Module.cpu() is a method

    def forward(self, *args: torch.Tensor) -> Any:
        raise NotImplementedError("NPUPartition.forward: run the program, fall back for this call — README.md, 'Falling back'")


# Register npu_backend under the name "kata_npu" when this module is imported, in a way that survives being
# imported twice. See README.md, "Registering the backend".
