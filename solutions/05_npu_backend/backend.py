"""Reference solution for kata 5: a torch.compile backend for the simulated NPU, with loud CPU fallback.

What `torch.compile(model, backend="kata_npu")` does with each graph Dynamo captures:

1. lower     -- aot_autograd turns the Dynamo graph (torch-level calls, parameters as inputs) into ATen
                graphs and hands each one to a compiler: the inference graph (under no_grad) to
                `compile_for_inference`; under autograd the forward and the backward graph to
                `compile_for_training`, and aot_autograd wires them into one autograd.Function, so gradients
                stay exact wherever each half runs;
2. legalise  -- `legalize_for_npu` rewrites layout-only ops the NPU has no name for into ones it has
                (`_unsafe_view` -> `view`), so they do not cut an NPU partition in two;
3. partition -- kata 4's `NPUOperatorSupport` says which nodes the NPU runs, and CapabilityBasedPartitioner
                moves each maximal group of them (one that creates no cycle) into a submodule
                `npu_partition_<i>`; every other node stays in the top graph and runs on the CPU;
4. fuse      -- kata 3's `fuse_linear_gelu` rewrites Linear -> GELU inside each NPU partition: one launch;
5. run       -- each partition becomes an `NPUPartition`: a cache of NPU programs, one per input signature
                (the shapes and dtypes of the tensors, the values of the ints), compiled the first time a
                signature is seen -- the graph may have a symbolic batch size, every program has a static one.
                In inference the partition's parameters are frozen into the program as constants (uploaded
                once) and re-uploaded only when one changes. Every program of the backend, whichever graph and
                partition compiled it, is kept in one least-recently-used cache (`PROGRAMS`): when program
                memory is full, the program used longest ago is released to make room, so the programs of a
                graph Dynamo no longer calls age out instead of keeping the NPU full. When the NPU refuses a
                signature's graph (float64, an op it lacks) or fails a run (a fault), that partition runs on the
                CPU, with an NPUFallbackWarning; a failed run affects that call only.

Partitioning leaves integer work to the host: kata 4's table says which ops the NPU has, and a node of such an op that
reads or makes an integer tensor (an int64 position-id add) stays on the CPU, as size arithmetic does, so that it does
not take its whole partition down with it.

Classification happens on the ATen graph, after lowering, because that is the graph the NPU compiles: a node
that is "matmul" in a Dynamo graph becomes expand + bmm + _unsafe_view in ATen, and the NPU runs none of those.
"""
from __future__ import annotations

import warnings
import weakref
from typing import Any, Callable, Sequence

import torch
import torch.fx
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

from checker.kit import load_reference
from katas.common.npu import (NPU, KeptPrograms, NPUCompileError, NPUFallbackWarning, NPUProgram,
                              NPURuntimeError)

_op_support = load_reference("04_op_support", "op_support.py")  # kata 4: NPUOperatorSupport
_fusion = load_reference("03_fusion_guard", "fusion.py")  # kata 3: fuse_linear_gelu

BACKEND_NAME = "kata_npu"
PARTITION_PREFIX = "npu_partition_"

aten = torch.ops.aten

# ATen ops that only re-index memory, mapped to the NPU op that does the same. `_unsafe_view` is `view` without
# autograd's alias tracking: decompositions (mm on a 3-D input, matmul) use it on a fresh result nobody else
# sees. In a graph autograd is done with, the two compute the same values and accept the same inputs.
LAYOUT_EQUIVALENTS = {aten._unsafe_view.default: aten.view.default}


def npu_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """The torch.compile backend: a callable computing what `gm` computes, on the NPU wherever it can.

    `gm` is a Dynamo graph (torch-level calls, parameters lifted to inputs), `example_inputs` its inputs
    (after a recompile with a new batch size, a SymInt and fake tensors of symbolic shape among them).
    """
    return aot_autograd(fw_compiler=compile_for_training, inference_compiler=compile_for_inference)(gm, example_inputs)


def compile_for_inference(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """The graph aot_autograd runs when no gradient is needed: parameters may be frozen into the programs."""
    return compile_for_npu(gm, example_inputs, freeze=True)


def compile_for_training(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """A forward or backward graph under autograd: parameters change every optimizer step, so they stay inputs."""
    return compile_for_npu(gm, example_inputs, freeze=False)


def compile_for_npu(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], *, freeze: bool = False) -> Callable:
    """Legalise, partition and fuse an ATen graph; each NPU partition compiles per input signature when called.

    Nothing is compiled for the NPU here: `example_inputs` may have symbolic shapes (a SymInt batch size after
    Dynamo's recompile), and an NPU program has static ones. The partitions learn their real shapes when called.
    """
    legalize_for_npu(gm)
    partitioned = partition_for_npu(gm)
    for node in partitioned.graph.nodes:
        if node.op == "call_module" and node.target.startswith(PARTITION_PREFIX):
            partition = partitioned.get_submodule(node.target)
            _fusion.fuse_linear_gelu(partition)
            setattr(partitioned, node.target, NPUPartition(node.target, partition, freeze=freeze))
    partitioned.recompile()
    return make_boxed_func(partitioned)  # aot_autograd calls compiled graphs with one list of arguments


def legalize_for_npu(gm: torch.fx.GraphModule) -> int:
    """Rewrite every layout-only op the NPU lacks into the NPU op that does the same (LAYOUT_EQUIVALENTS).

    Runs before partitioning: left alone, a bias-free Linear on a 3-D input (mm + _unsafe_view) splits the
    NPU work around it into two programs with a round trip through host memory in between. Returns the count.
    """
    count = 0
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in LAYOUT_EQUIVALENTS:
            node.target = LAYOUT_EQUIVALENTS[node.target]  # same arguments (self, size), same result
            count += 1
    if count:
        gm.graph.lint()
        gm.recompile()
    return count


def partition_for_npu(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Move every maximal group of NPU-supported nodes into a submodule `npu_partition_<i>`; the rest stays.

    `allows_single_node_partition=True`: the partitioner's default drops partitions of a single compute node,
    which would quietly send a lone supported op (a relu between two CPU ops) to the CPU. That is safe only
    because kata 4's support never claims placeholders or the output. Kata 4 also keeps size arithmetic on the
    host: with a symbolic batch size the graph computes sizes (`operator.mul(s77, 5)` on SymInts), which are no
    NPU op; the host hands them to the programs as ints.
    """
    partitioner = CapabilityBasedPartitioner(gm, NPUFloatSupport(), allows_single_node_partition=True)
    return partitioner.partition_and_fuse(prefix=PARTITION_PREFIX)


def _values(value: Any) -> list:
    return [v for v in (value if isinstance(value, (tuple, list)) else (value,)) if isinstance(v, torch.Tensor)]


def computes_on_floats(node: torch.fx.Node) -> bool:
    """True unless the node reads or makes an integer or bool tensor (as the capture recorded them in
    `meta["val"]`). Such a node is index bookkeeping -- position ids, masks -- which the host does, as it does size
    arithmetic; inside a partition NPU.compile would refuse it and take every float op around it to the CPU.
    A float64 node is model work: it stays in its partition, and the NPU's refusal falls back loudly."""
    tensors = _values(node.meta.get("val"))
    for arg in node.all_input_nodes:
        tensors += _values(arg.meta.get("val"))
    return all(t.dtype.is_floating_point for t in tensors)


class NPUFloatSupport(_op_support.NPUOperatorSupport):
    """Kata 4's op table (which ops the NPU has), for nodes that compute on floating-point tensors."""

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        return super().is_node_supported(submodules, node) and computes_on_floats(node)


def signature(args: Sequence[Any]) -> tuple:
    """What an NPU program is specialised to: each tensor's shape and dtype, each int's value."""
    return tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else a for a in args)


def describe_inputs(args: Sequence[Any]) -> str:
    """Inputs as a person reads them: "(10, 4) float32, 10"."""
    return ", ".join(f"{tuple(a.shape)} {str(a.dtype).removeprefix('torch.')}" if isinstance(a, torch.Tensor)
                     else repr(a) for a in args)


def freeze_inputs(gm: torch.fx.GraphModule, constants: dict[int, torch.Tensor]) -> torch.fx.GraphModule:
    """A copy of `gm` in which the placeholders at the positions in `constants` read those tensors as get_attr
    constants: NPU.compile uploads constants once, where inputs cross to the device on every run."""
    graph, env, attrs, position = torch.fx.Graph(), {}, {}, 0
    for node in gm.graph.nodes:
        if node.op == "placeholder" and position in constants:
            attrs[f"frozen_{position}"] = constants[position]
            env[node] = graph.get_attr(f"frozen_{position}")
        else:
            env[node] = graph.node_copy(node, lambda n: env[n])
        position += node.op == "placeholder"
    return torch.fx.GraphModule(attrs, graph)


# Every program the backend compiled, keyed by (partition, signature), least recently used first out. One cache
# for all graphs: after Dynamo recompiles for a new shape, the first graph is not called again, and its programs
# must be the first to go when memory runs out, not keep the NPU full for good.
PROGRAMS = KeptPrograms()


class NPUPartition(torch.nn.Module):
    """One NPU partition at run time: its programs (in `PROGRAMS`, one per input signature), and the partition's
    own GraphModule (`on_cpu`) for whatever the NPU refuses or fails.

    With `freeze`, arguments that are nn.Parameters become constants of the programs. Each program remembers the
    parameters it froze by identity and version (`tensor._version`, which every in-place change bumps): when the
    caller passes another tensor, or changes one in place, every program of this partition is stale and released;
    the next call compiles, and uploads, the current values.
    """

    def __init__(self, name: str, on_cpu: torch.fx.GraphModule, *, freeze: bool = False) -> None:
        super().__init__()
        self.name = name
        self.on_cpu = on_cpu  # not `self.cpu`: nn.Module.cpu() is a method
        self.freeze = freeze
        self.signatures: set[tuple] = set()  # signatures with a program in PROGRAMS (it may have been evicted since)
        self.refused: set[tuple] = set()  # signatures whose graph the NPU refused (float64, an op): asked once
        self.frozen: list[tuple[int, torch.Tensor, int, int]] = []  # (position, tensor, _version, data_ptr)
        weakref.finalize(self, _forget, id(self), self.signatures)  # a graph Dynamo dropped frees its programs

    def forward(self, *args: Any) -> Any:
        frozen = self.frozen_positions(args)
        program = self.program_for(args, frozen)
        if program is None:
            return self.on_cpu(*args)  # the NPU refused this signature, and we warned when it did
        return self.run_on_npu(program, [a for i, a in enumerate(args) if i not in frozen], args)

    def program_for(self, args: Sequence[Any], frozen: set[int]) -> NPUProgram | None:
        """The program for this call's signature: kept, or compiled now (None: the NPU refused it, warned)."""
        key = signature(args)
        if key in self.refused:
            return None
        try:
            program = PROGRAMS.get((id(self), key), lambda: self.compile_program(args, frozen))
        except NPUCompileError as error:
            inputs = [a for i, a in enumerate(args) if i not in frozen]
            if error.what == "program":  # memory full and nothing of ours to release: only this call, ask again
                warnings.warn(f"{self.name} ran on the CPU for inputs {describe_inputs(inputs)}: {error}",
                              NPUFallbackWarning, stacklevel=3)
                return None
            warnings.warn(f"{self.name} runs on the CPU for inputs {describe_inputs(inputs)}: {error}",
                          NPUFallbackWarning, stacklevel=3)
            self.refused.add(key)  # the graph itself: the answer will not change
            return None
        self.signatures.add(key)
        return program

    def run_on_npu(self, program: NPUProgram, inputs: list, args: Sequence[Any]) -> Any:
        """Run `program`; if the run fails, rerun this partition on the CPU, for this call only (warned)."""
        try:
            return program(*inputs)
        except NPURuntimeError as error:
            # Only this call falls back: a fault may be transient, so the next call tries the NPU again.
            warnings.warn(f"{self.name} reran on the CPU for this call: {error}", NPUFallbackWarning, stacklevel=3)
            return self.on_cpu(*args)

    def frozen_positions(self, args: Sequence[Any]) -> set[int]:
        """Positions of the parameters frozen into the programs; releases every program if one of them changed."""
        if not self.freeze:
            return set()
        current = [(i, a, a._version, a.data_ptr()) for i, a in enumerate(args) if isinstance(a, torch.nn.Parameter)]
        same = len(current) == len(self.frozen) and all(
            i == j and a is b and version == old_version and ptr == old_ptr
            for (i, a, version, ptr), (j, b, old_version, old_ptr) in zip(current, self.frozen))
        if not same:
            _forget(id(self), self.signatures)  # stale constants: release them, their memory is needed
            self.refused.clear()
            self.frozen = current
        return {i for i, *_ in current}

    def compile_program(self, args: Sequence[Any], frozen: set[int]) -> NPUProgram:
        """An NPU program for these concrete arguments, the frozen ones as constants (NPUCompileError if refused)."""
        graph = freeze_inputs(self.on_cpu, {i: args[i] for i in frozen}) if frozen else self.on_cpu
        return NPU.compile(graph, [a for i, a in enumerate(args) if i not in frozen], name=self.name)


def _forget(owner: int, signatures: set[tuple]) -> None:
    """Release the programs a partition compiled (it went stale, or Dynamo dropped its graph)."""
    for key in signatures:
        PROGRAMS.discard((owner, key))
    signatures.clear()


def register(name: str = BACKEND_NAME) -> None:
    """Make `torch.compile(model, backend=name)` use `npu_backend`.

    register_backend refuses a name that is taken, and this file may be imported more than once (the checker
    imports it under several module names; so do importlib.reload and notebooks): the latest import wins.
    """
    from torch._dynamo.backends import registry

    registry._COMPILER_FNS.pop(name, None)  # noqa: SLF001 - the registry has no public "replace"
    torch._dynamo.register_backend(npu_backend, name=name)


register()
