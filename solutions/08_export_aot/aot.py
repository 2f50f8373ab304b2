"""Kata 8 reference: the ahead-of-time path to the NPU — export with a dynamic batch, decompose to core ATen
while keeping what the NPU runs natively, legalise, partition, delegate, and a program that saves and loads."""
from __future__ import annotations

import inspect
import operator
import sys

import torch
import torch.fx
from torch.export import Dim, ExportedProgram
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

from katas.common.npu import KERNELS, NPU_DTYPES, NPU_OPS, canonical_name
from katas.common.npu.aot import pack

aten = torch.ops.aten


# --- Step 1: export, then decompose to the NPU's opset ---------------------------------------------------

def npu_decomposition_table() -> dict:
    """torch's default decompositions (to core ATen), minus the ops the NPU runs as they are."""
    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        if canonical_name(op) in NPU_OPS:
            del table[op]
    return table


def export_for_npu(model: torch.nn.Module, example_inputs: tuple) -> ExportedProgram:
    """Export `model` with dimension 0 of every input (its batch) dynamic, then decompose it for the NPU. Each input
    has a Dim of its own: Dims of one name are one symbol, and the inputs' batches are independent."""
    dims = tuple({0: Dim(f"batch{i}")} for i in range(len(example_inputs)))
    ep = torch.export.export(model, tuple(example_inputs), dynamic_shapes=dims)
    return ep.run_decompositions(npu_decomposition_table())


# --- Step 2: legalise -----------------------------------------------------------------------------------

def _is_full_slice(node: torch.fx.Node) -> bool:
    """`aten.slice.Tensor(x, dim, start, end, step)` from 0 to the end, step 1. Export writes "to the end" as
    sys.maxsize, and drops a slice whose static end covers the whole dimension: any other end keeps part of x."""
    start, end, step = (list(node.args[2:]) + [None, None, 1][len(node.args) - 2:])[:3]
    return start in (0, None) and (end is None or end >= sys.maxsize) and step == 1


def _is_noop(node: torch.fx.Node) -> bool:
    """An alias, a clone, or a slice of everything: the value of its input, under another name. A clone with
    memory_format=torch.contiguous_format is not: it makes a transposed tensor contiguous, and the view after it
    (`o.transpose(1, 2).reshape(B, N, C)`) is legal only on its output."""
    if node.target is aten.alias.default:
        return True
    if node.target is aten.clone.default:
        return node.kwargs.get("memory_format") in (None, torch.preserve_format)
    return node.target is aten.slice.Tensor and _is_full_slice(node)


def _static_sizes(node: torch.fx.Node) -> list[int] | None:
    """The output's sizes as ints, the one symbolic size (the batch) as -1; None if two sizes are symbolic."""
    sizes = [s if isinstance(s, int) else -1 for s in node.meta["val"].shape]
    return sizes if sizes.count(-1) <= 1 else None


def _is_legal_view(node: torch.fx.Node, sizes: list[int]) -> bool:
    """A view already written with these int sizes: nothing to rewrite (a second legalise changes nothing)."""
    return node.target is aten.view.default and list(node.args[1]) == sizes


RESHAPES = (aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.view.default,
            aten.reshape.default, aten._unsafe_view.default)


def legalise(gm: torch.fx.GraphModule) -> int:
    """Rewrite `gm` in place into ops the NPU accepts; returns how many aliases, clones, slices and reshapes were
    removed or rewritten (the sym_size nodes left unread are not counted).

    - aliases, clones and full slices are removed: their users read the input itself;
    - unsqueeze, squeeze, reshape and views whose sizes come from `sym_size` become `aten.view` with sizes that
      are plain ints, the dynamic batch written as -1, so no SymInt flows into an NPU partition.
    """
    changed = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        if _is_noop(node):
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
            changed += 1
        elif node.target in RESHAPES:
            sizes = _static_sizes(node)
            if sizes is None or _is_legal_view(node, sizes):
                continue
            with gm.graph.inserting_before(node):
                view = gm.graph.call_function(aten.view.default, (node.args[0], sizes))
            view.meta = dict(node.meta)
            node.replace_all_uses_with(view)
            gm.graph.erase_node(node)
            changed += 1
    gm.graph.eliminate_dead_code()  # the sym_size nodes nothing reads any more
    gm.recompile()
    return changed


# --- Step 3: what runs on the NPU -----------------------------------------------------------------------

def _tensor_values(value) -> list:
    return [v for v in torch.utils._pytree.tree_leaves(value) if isinstance(v, torch.Tensor)]


def _has_kernel(target) -> bool:
    """The overload takes the arguments of the NPU's kernel for its op: `aten.view.dtype` (a dtype, not sizes) and
    the `out_dtype` overloads (`mm.dtype`, `addmm.dtype`) do not."""
    parameters = inspect.signature(KERNELS[canonical_name(target)]).parameters
    return all(argument.name in parameters for argument in target._schema.arguments)


def is_npu_node(node: torch.fx.Node) -> bool:
    """True when the NPU can run `node`: an op in NPU_OPS through an overload its kernel takes, on tensors of NPU
    dtypes, with no size computed on the host (SymInt) among its inputs, making tensors of NPU dtypes.
    Placeholders, outputs and get_attr are not compute: False."""
    if node.op != "call_function" or canonical_name(node.target) not in NPU_OPS or not _has_kernel(node.target):
        return False
    for source in node.all_input_nodes:
        value = source.meta.get("val")
        if not isinstance(value, torch.Tensor) or value.dtype not in NPU_DTYPES:
            return False
    outputs = _tensor_values(node.meta.get("val"))
    return bool(outputs) and all(t.dtype in NPU_DTYPES for t in outputs)


class NpuSupport(OperatorSupport):
    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        return is_npu_node(node)


# --- Step 4: delegate -----------------------------------------------------------------------------------

def _delegate_partition(ep: ExportedProgram, gm: torch.fx.GraphModule, call: torch.fx.Node) -> None:
    """Replace the `call_module` of one fused partition with npu_aot.run_program on its packed graph."""
    sub = gm.get_submodule(call.target)
    single = isinstance(sub.graph.output_node().args[0], torch.fx.Node)
    _call_instead(gm, call, torch.ops.npu_aot.run_program.default, pack(sub), single)


def _call_instead(gm: torch.fx.GraphModule, call: torch.fx.Node, op, first_argument, single: bool) -> None:
    """Replace the partition's `call_module` node with `op(first_argument, [its inputs])`, an op returning a list:
    with `meta["val"]` from the op's fake kernel, read through getitem when the partition had one output (with
    several, its users index it with getitem already). The submodule goes too."""
    graph = gm.graph
    with graph.inserting_before(call):
        run = graph.call_function(op, (first_argument, list(call.args)))
    fake_inputs = [a.meta["val"] for a in call.args]
    with torch._guards.detect_fake_mode(fake_inputs):
        run.meta["val"] = op(first_argument, fake_inputs)
    if single:
        with graph.inserting_after(run):
            first = graph.call_function(operator.getitem, (run, 0))
        first.meta["val"] = run.meta["val"][0]
        call.replace_all_uses_with(first)
    else:
        call.replace_all_uses_with(run)
    graph.erase_node(call)
    delattr(gm, call.target)


def delegate_to_npu(ep: ExportedProgram) -> ExportedProgram:
    """Partition `ep`'s graph with NpuSupport and run every partition on the NPU; CPU ops stay as they are.

    The graph is changed in place and its signature kept true: parameters and buffers stay program inputs
    (each partition receives them as tensors), and the output specs name the new output nodes."""
    gm = ep.graph_module
    partitioner = CapabilityBasedPartitioner(gm, NpuSupport(), allows_single_node_partition=True)
    fused = partitioner.fuse_partitions(partitioner.propose_partitions())
    for node in list(fused.graph.nodes):
        if node.op == "call_module":
            _delegate_partition(ep, fused, node)
    fused.graph.lint()
    fused.recompile()
    _sync_signature(ep)
    return ep


def _sync_signature(ep: ExportedProgram) -> None:
    """Name, in the graph signature, the placeholders and outputs the graph has now, position by position.

    The signature refers to nodes by name, and rewriting renames them: the partitioner's fuse step renames a
    placeholder called `input` to `input_1`, and a delegate's output is a new node. torch.export.save checks."""
    graph = ep.graph_module.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for spec, node in zip(ep.graph_signature.input_specs, placeholders):
        spec.arg.name = node.name
    for spec, node in zip(ep.graph_signature.output_specs, graph.output_node().args[0]):
        spec.arg.name = node.name


def lower(model: torch.nn.Module, example_inputs: tuple) -> ExportedProgram:
    """The whole path: export and decompose, legalise, delegate. The result saves with torch.export.save."""
    ep = export_for_npu(model, example_inputs)
    legalise(ep.graph_module)
    return delegate_to_npu(ep)
