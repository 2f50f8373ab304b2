"""blind round 1's correct_a (2026-12-05), brought to the lesson's later rules (a clone naming a memory format other than preserve_format stays, channels_last too (blind round 4); is_npu_node says False for an overload the NPU's kernel does not take): the table built by walking each NPU op's overload packet, Dim.DYNAMIC per input, legalise sorting nodes into drop/view, the signature rebuilt from new InputSpec/OutputSpec objects.

Kata 8 — correct attempt A (blind round k08-r1).

Roads taken that differ from the hints:
- the table removes NPU ops by walking each NPU op's overload packet (torch.ops.aten.<name>.<overload>) rather
  than filtering the table's keys;
- export uses Dim.DYNAMIC per input (not a named Dim shared by name);
- legalise classifies each node once into "drop" / "view" and rewrites with a small dispatch;
- the signature is rebuilt from new InputSpec / OutputSpec objects, not renamed in place.
"""
from __future__ import annotations

import inspect
import operator
import sys

import torch
import torch.fx
from torch.export import ExportedProgram
from torch.export.graph_signature import InputSpec, OutputSpec, TensorArgument
from torch.fx.passes.operator_support import OperatorSupport

from katas.common.npu import KERNELS, NPU_DTYPES, NPU_OPS, canonical_name  # noqa: F401 - the device's facts
from katas.common.npu.aot import pack  # noqa: F401 - a partition's graph -> the program text run_program takes

aten = torch.ops.aten


# --- Step 1 ------------------------------------------------------------------------------------------------------
def npu_decomposition_table() -> dict:
    table = torch.export.default_decompositions()
    for name in NPU_OPS:
        packet = getattr(aten, name, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            if op in table:
                del table[op]
    return table


def export_for_npu(model: torch.nn.Module, example_inputs: tuple) -> ExportedProgram:
    inputs = tuple(example_inputs)
    dynamic = tuple({0: torch.export.Dim.DYNAMIC} for _ in inputs)
    ep = torch.export.export(model, inputs, dynamic_shapes=dynamic)
    return ep.run_decompositions(npu_decomposition_table())


# --- Step 2 ------------------------------------------------------------------------------------------------------
_DROP = {aten.alias.default, aten.clone.default}
_RESHAPES = {"unsqueeze", "squeeze", "reshape", "_unsafe_view"}


def _is_sym(s) -> bool:
    return not isinstance(s, int)


def _classify(node: torch.fx.Node) -> str | None:
    if node.op != "call_function":
        return None
    if node.target in _DROP and node.kwargs.get("memory_format") in (None, torch.preserve_format):
        return "drop"
    if node.target in _DROP:
        return None  # a clone naming a memory format (contiguous_format, channels_last, ...): a view after it needs it
    if node.target is aten.slice.Tensor:
        args = list(node.args) + [None] * (5 - len(node.args))
        dim, start, end, step = args[1], args[2], args[3], args[4]
        start = node.kwargs.get("start", start)
        end = node.kwargs.get("end", end)
        step = node.kwargs.get("step", step)
        if start in (0, None) and end in (sys.maxsize, None) and step in (1, None):
            return "drop"
        return None
    name = canonical_name(node.target)
    if name in _RESHAPES or name == "view":
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            return None
        if sum(_is_sym(s) for s in val.shape) > 1:
            return None
        if name == "view":
            if node.target is not aten.view.default:
                return None  # aten.view.dtype: a reinterpretation, no sizes
            sizes = node.args[1] if len(node.args) > 1 else node.kwargs.get("size")
            if not any(isinstance(s, torch.fx.Node) or _is_sym(s) for s in sizes):
                return None  # legal already
        return "view"
    return None


def legalise(gm: torch.fx.GraphModule) -> int:
    changed = 0
    for node in list(gm.graph.nodes):
        kind = _classify(node)
        if kind == "drop":
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
            changed += 1
        elif kind == "view":
            sizes = [-1 if _is_sym(s) else int(s) for s in node.meta["val"].shape]
            with gm.graph.inserting_after(node):
                new = gm.graph.call_function(aten.view.default, (node.args[0], sizes))
            new.meta.update(node.meta)
            node.replace_all_uses_with(new)
            gm.graph.erase_node(node)
            changed += 1
    gm.graph.eliminate_dead_code()
    gm.graph.lint()
    gm.recompile()
    return changed


# --- Step 3 ------------------------------------------------------------------------------------------------------
def _npu_tensor(v) -> bool:
    return isinstance(v, torch.Tensor) and v.dtype in NPU_DTYPES


def is_npu_node(node: torch.fx.Node) -> bool:
    if node.op != "call_function" or canonical_name(node.target) not in NPU_OPS:
        return False
    takes = inspect.signature(KERNELS[canonical_name(node.target)]).parameters
    if not all(argument.name in takes for argument in node.target._schema.arguments):
        return False
    for inp in node.all_input_nodes:
        if not _npu_tensor(inp.meta.get("val")):
            return False
    out = node.meta.get("val")
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    return bool(outs) and all(_npu_tensor(o) for o in outs)


class NpuSupport(OperatorSupport):
    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        return is_npu_node(node)


# --- Step 4 ------------------------------------------------------------------------------------------------------
def _arg_like(old, node):
    return type(old)(name=node.name) if isinstance(old, TensorArgument) else _renamed(old, node)


def _renamed(old, node):
    try:
        return type(old)(name=node.name)
    except TypeError:
        return old


def delegate_to_npu(ep: ExportedProgram) -> ExportedProgram:
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

    gm = ep.graph_module
    partitioner = CapabilityBasedPartitioner(gm, NpuSupport(), allows_single_node_partition=True)
    gm = partitioner.fuse_partitions(partitioner.propose_partitions())
    graph = gm.graph
    run_op = torch.ops.npu_aot.run_program.default
    for call in [n for n in graph.nodes if n.op == "call_module"]:
        sub = gm.get_submodule(call.target)
        program = pack(sub)
        inputs = list(call.args)
        with graph.inserting_before(call):
            run = graph.call_function(run_op, (program, inputs))
        fakes = [a.meta["val"] for a in inputs]
        mode = torch._guards.detect_fake_mode(fakes)
        with mode:
            run.meta["val"] = run_op(program, fakes)
        sub_out = next(n for n in sub.graph.nodes if n.op == "output").args[0]
        if isinstance(sub_out, (list, tuple)):
            call.replace_all_uses_with(run)
        else:
            with graph.inserting_after(run):
                item = graph.call_function(operator.getitem, (run, 0))
            item.meta["val"] = run.meta["val"][0]
            call.replace_all_uses_with(item)
        graph.erase_node(call)
        delattr(gm, call.target)
    graph.lint()
    gm.recompile()

    # the signature, rebuilt position by position
    sig = ep.graph_signature
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    outputs = list(next(n for n in graph.nodes if n.op == "output").args[0])
    new_inputs = [InputSpec(kind=s.kind, arg=_arg_like(s.arg, n), target=s.target, persistent=s.persistent)
                  for s, n in zip(sig.input_specs, placeholders)]
    new_outputs = [OutputSpec(kind=s.kind, arg=_arg_like(s.arg, n), target=s.target)
                   if isinstance(n, torch.fx.Node) else s
                   for s, n in zip(sig.output_specs, outputs)]
    sig.input_specs[:] = new_inputs
    sig.output_specs[:] = new_outputs
    return ep


def lower(model: torch.nn.Module, example_inputs: tuple) -> ExportedProgram:
    ep = export_for_npu(model, example_inputs)
    legalise(ep.graph_module)
    return delegate_to_npu(ep)
