"""Kata 5 — a torch.compile backend for the simulated NPU. This is the only file you edit for this kata.

Start with katas 3 and 4: this backend runs your own fusion pass (katas/03_fusion_guard/fusion.py) and op table
(katas/04_op_support/op_support.py), so `make kata N=3` and `make kata N=4` should pass first (`make progress`).
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
    torch._C._nn.linear; the model's parameters are extra placeholders) and `example_inputs` are its inputs,
    in placeholder order -- after a new batch size, a SymInt and tensors of symbolic shape among them. The
    callable you return is called with concrete inputs like these and must return what `gm(*inputs)` returns.

    - Lower to ATen with aot_autograd (inference graphs and training graphs come to different compilers),
      legalise layout-only ops, partition with your kata 4 support, fuse Linear -> GELU (kata 3) inside each
      NPU partition, and run everything else on the CPU.
    - Each NPU partition compiles one NPU program per concrete input signature when it is first called, and
      reuses it; in inference its parameters are program constants, uploaded again only when they change.
    - Partition with your kata 4 support, for float work only: a supported op on int64 values stays on the CPU.
    - When program memory is full, release the program your backend used longest ago (one LRU cache for the
      whole backend, e.g. katas.common.npu.KeptPrograms) and compile again.
    - A signature whose graph NPU.compile refuses (float64, an op it lacks) runs on the CPU from then on, with
      an NPUFallbackWarning naming the partition, the input shapes and the reason.
    - A program call that raises NPURuntimeError (a device fault) reruns that partition on the CPU for that
      call only, with an NPUFallbackWarning; later calls use the NPU again.
    - Under autograd, outputs and gradients match eager.

    See README.md, "The pipeline".
    """
    raise NotImplementedError("npu_backend: lower, legalise, partition, fuse, wrap each partition -- README.md, "
                              "'The pipeline'")


def compile_for_npu(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], *, freeze: bool = False) -> Callable:
    """Given an ATen graph (what aot_autograd hands its compilers), return a runnable version of it whose NPU
    partitions run as NPUPartitions. Compile nothing for the NPU here: `example_inputs` may have symbolic
    shapes. `freeze`: parameters may become program constants (inference only). See README.md, "The pipeline"."""
    raise NotImplementedError("compile_for_npu: legalise, partition, fuse, swap in NPUPartitions -- README.md, "
                              "'The pipeline'")


def legalize_for_npu(gm: torch.fx.GraphModule) -> int:
    """Rewrite layout-only nodes the NPU has no op for (aten._unsafe_view) into NPU ops that do the same, in
    place; return how many. See README.md, "Legalise before you partition"."""
    raise NotImplementedError("legalize_for_npu: _unsafe_view -> view -- README.md, 'Legalise before you partition'")


def partition_for_npu(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Move each maximal group of NPU-supported nodes of `gm` into a submodule; the rest stays in `gm`.
    See README.md, "The pipeline", step 3."""
    raise NotImplementedError("partition_for_npu: CapabilityBasedPartitioner with your kata 4 support -- README.md, "
                              "'The pipeline'")


class NPUPartition(torch.nn.Module):
    """One NPU partition at run time: the partition's own GraphModule (`on_cpu`), and a cache of NPUPrograms,
    one per input signature (shapes and dtypes of the tensors, values of the ints), compiled on first use.

    - With `freeze`, arguments that are nn.Parameters are program constants; a parameter that is another
      tensor, or has another `_version`, than when it was frozen makes every program of this partition stale.
    - A signature NPU.compile refuses runs `on_cpu` from then on (warn once, do not ask again).
    - A program run that raises NPURuntimeError reruns `on_cpu` for that call only (warn).

    See README.md, "New shapes", "When program memory is full", "Weights" and "Falling back".
    """

    def __init__(self, name: str, on_cpu: torch.fx.GraphModule, *, freeze: bool = False) -> None:
        super().__init__()
        self.name = name
        self.on_cpu = on_cpu  # not `self.cpu`: nn.Module.cpu() is a method
        self.freeze = freeze
        self.programs: dict[tuple, NPUProgram | None] = {}  # signature -> program, or None: the NPU refused it

    def forward(self, *args: Any) -> Any:
        raise NotImplementedError("NPUPartition.forward: find or compile the program for this signature, run it, "
                                  "fall back -- README.md, 'New shapes'")


# Register npu_backend under the name "kata_npu" when this module is imported, in a way that survives being
# imported twice. See README.md, "Registering the backend".
