"""Reference solution for kata 5: a torch.compile backend for the simulated NPU, with loud CPU fallback.

What `torch.compile(model, backend="kata_npu")` does with each graph Dynamo captures:

1. lower     -- aot_autograd turns the Dynamo graph (torch-level calls, parameters as inputs) into ATen
                graphs and hands each one to `compile_for_npu`: the inference graph under no_grad; the
                forward and the backward graph under autograd, which aot_autograd wires into one
                autograd.Function, so gradients stay exact wherever each half runs;
2. partition -- kata 4's `NPUOperatorSupport` says which nodes the NPU runs, and CapabilityBasedPartitioner
                moves each maximal group of them (one that creates no cycle) into a submodule
                `npu_partition_<i>`; every other node stays in the top graph and runs on the CPU;
3. fuse      -- kata 3's `fuse_linear_gelu` rewrites Linear -> GELU inside each NPU partition: one launch;
4. compile   -- `NPU.compile` turns each partition into an NPUProgram. A partition the NPU rejects (float64,
                a symbolic batch size) stays on the CPU, with an NPUFallbackWarning naming it and the reason;
5. run       -- the top graph calls an `NPUPartition` per program. A call that raises NPURuntimeError (a
                device fault, an input shape the program was not compiled for) reruns that partition on the
                CPU, with a warning; the next call tries the NPU again.

Classification happens on the ATen graph, after lowering, because that is the graph the NPU compiles: a node
that is "matmul" in a Dynamo graph becomes expand + bmm + _unsafe_view in ATen, and the NPU runs none of those.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import torch
import torch.fx
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

from checker.kit import load_reference
from katas.common.npu import NPU, NPUCompileError, NPUFallbackWarning, NPUProgram, NPURuntimeError, canonical_name

_op_support = load_reference("04_op_support", "op_support.py")  # kata 4: NPUOperatorSupport
_fusion = load_reference("03_fusion_guard", "fusion.py")  # kata 3: fuse_linear_gelu

BACKEND_NAME = "kata_npu"
PARTITION_PREFIX = "npu_partition_"


def npu_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """The torch.compile backend: a callable computing what `gm` computes, on the NPU wherever it can.

    `gm` is a Dynamo graph (torch-level calls, parameters lifted to inputs), `example_inputs` its real inputs.
    aot_autograd lowers it to ATen and calls `compile_for_npu` with every graph it makes.
    """
    return aot_autograd(fw_compiler=compile_for_npu)(gm, example_inputs)


def compile_for_npu(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """Split an ATen graph between NPU and CPU, fuse and compile the NPU parts; return the runnable graph.

    aot_autograd passes fake `example_inputs`, and every node carries its fake value in `meta["val"]`:
    that gives each partition's input shapes without running anything.
    """
    partitioned = partition_for_npu(gm)
    for node in list(partitioned.graph.nodes):
        if node.op == "call_module" and node.target.startswith(PARTITION_PREFIX):
            lower_partition(partitioned, node)
    partitioned.recompile()
    return make_boxed_func(partitioned)  # aot_autograd calls compiled graphs with one list of arguments


def partition_for_npu(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Move every maximal group of NPU-supported nodes into a submodule `npu_partition_<i>`; the rest stays.

    `allows_single_node_partition=True`: the partitioner's default drops partitions of a single compute node,
    which would quietly send a lone supported op (a relu between two CPU ops) to the CPU. That is safe only
    because kata 4's support never claims placeholders or the output.
    """
    support = _op_support.NPUOperatorSupport()
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    return partitioner.partition_and_fuse(prefix=PARTITION_PREFIX)


def lower_partition(parent: torch.fx.GraphModule, call: torch.fx.Node) -> None:
    """Fuse and compile the partition `call` runs: swap in an NPUPartition, or warn and leave it on the CPU."""
    partition = parent.get_submodule(call.target)
    _fusion.fuse_linear_gelu(partition)
    example_inputs = [arg.meta.get("val") if isinstance(arg, torch.fx.Node) else arg for arg in call.args]
    try:
        program = NPU.compile(partition, example_inputs, name=call.target)
    except NPUCompileError as error:
        warnings.warn(f"{call.target} ({ops_in(partition)}) runs on the CPU: {error}", NPUFallbackWarning,
                      stacklevel=2)
        return
    setattr(parent, call.target, NPUPartition(call.target, program, partition))


def ops_in(gm: torch.fx.GraphModule) -> str:
    """A partition's ops as a person reads them: "t, addmm, gelu"."""
    return ", ".join(canonical_name(n.target) or n.name for n in gm.graph.nodes if n.op == "call_function")


class NPUPartition(torch.nn.Module):
    """One partition: runs its NPUProgram, or -- for a call the NPU fails -- its CPU graph, with a warning."""

    def __init__(self, name: str, program: NPUProgram, on_cpu: torch.fx.GraphModule) -> None:
        super().__init__()
        self.name = name
        self.program = program
        self.on_cpu = on_cpu

    def forward(self, *args: torch.Tensor) -> Any:
        try:
            return self.program(*args)
        except NPURuntimeError as error:
            # Only this call falls back: a fault may be transient and the next input may fit the program,
            # so the next call tries the NPU again.
            warnings.warn(f"{self.name} reran on the CPU for this call: {error}", NPUFallbackWarning, stacklevel=2)
            return self.on_cpu(*args)


def register(name: str = BACKEND_NAME) -> None:
    """Make `torch.compile(model, backend=name)` use `npu_backend`.

    register_backend refuses a name that is taken, and this file may be imported more than once (the checker
    imports it under several module names; so do importlib.reload and notebooks): the latest import wins.
    """
    from torch._dynamo.backends import registry

    registry._COMPILER_FNS.pop(name, None)  # noqa: SLF001 - the registry has no public "replace"
    torch._dynamo.register_backend(npu_backend, name=name)


register()
