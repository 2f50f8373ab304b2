"""A different correct attempt at kata 8, written without looking at the reference's internals.

- The table is a plain dict built by a comprehension (run_decompositions takes any mapping), the op's name read
  from its schema; each input gets a Dim of its own.
- legalise works in two passes (no-ops first, then reshapes) and counts what it erased, including the sym_size
  nodes it left unread.
- is_npu_node reads the dtypes from every fake value at once.
- The delegate always indexes the program's outputs with getitem (a one-output partition is made to return a
  tuple first), and keeps the signature true by writing new InputSpec/OutputSpec objects rather than renaming
  the arguments of the old ones.
"""
from __future__ import annotations

import inspect
import operator

import torch
import torch.fx
from torch.export import Dim, ExportedProgram
from torch.export.graph_signature import InputSpec, OutputSpec, TensorArgument
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

from katas.common.npu import KERNELS, NPU_DTYPES, NPU_OPS
from katas.common.npu.aot import pack

aten = torch.ops.aten
RUN = torch.ops.npu_aot.run_program.default


def _op_name(op) -> str:
    return op._schema.name.split("::")[-1]


def npu_decomposition_table() -> dict:
    return {op: fn for op, fn in torch.export.default_decompositions().items() if _op_name(op) not in NPU_OPS}


def export_for_npu(model, example_inputs) -> ExportedProgram:
    shapes = tuple({0: Dim(f"batch_{i}")} for i in range(len(example_inputs)))
    return torch.export.export(model, tuple(example_inputs), dynamic_shapes=shapes).run_decompositions(
        npu_decomposition_table())


def _removable(node) -> bool:
    if node.target in (aten.alias.default, aten.clone.default):
        return node.kwargs.get("memory_format", torch.preserve_format) is torch.preserve_format
    if node.target is aten.slice.Tensor:
        x, dim = node.args[0], node.args[1] if len(node.args) > 1 else 0
        start = node.args[2] if len(node.args) > 2 else None
        end = node.args[3] if len(node.args) > 3 else None
        step = node.args[4] if len(node.args) > 4 else 1
        full = x.meta["val"].shape[dim]
        return (start or 0) == 0 and step == 1 and (end is None or (isinstance(end, int) and end >= 2 ** 62)
                                                   or end is full)
    return False


_VIEWS = {"unsqueeze", "squeeze", "reshape", "_unsafe_view", "view"}


def legalise(gm) -> int:
    count = 0
    for node in [n for n in gm.graph.nodes if n.op == "call_function" and _removable(n)]:
        node.replace_all_uses_with(node.args[0])
        gm.graph.erase_node(node)
        count += 1
    for node in [n for n in gm.graph.nodes if n.op == "call_function"]:
        if not isinstance(node.target, torch._ops.OpOverload) or _op_name(node.target) not in _VIEWS:
            continue
        if node.target is aten.view.dtype:
            continue  # the bytes seen as another dtype: not a reshape
        shape = node.meta["val"].shape
        symbolic = [i for i, s in enumerate(shape) if not isinstance(s, int)]
        if len(symbolic) > 1:
            continue
        sizes = [-1 if i in symbolic else int(s) for i, s in enumerate(shape)]
        if node.target is aten.view.default and list(node.args[1]) == sizes:
            continue
        node.target, node.args, node.kwargs = aten.view.default, (node.args[0], sizes), {}
        count += 1
    for node in reversed(list(gm.graph.nodes)):  # sizes computed on the host that nothing reads, last first
        size_math = node.target is aten.sym_size.int or (
            node.op == "call_function" and isinstance(node.meta.get("val"), torch.SymInt))
        if size_math and not node.users:
            gm.graph.erase_node(node)
    gm.recompile()
    return count


def is_npu_node(node) -> bool:
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return False
    if _op_name(node.target) not in NPU_OPS:
        return False
    kernel_takes = inspect.signature(KERNELS[_op_name(node.target)]).parameters
    if any(argument.name not in kernel_takes for argument in node.target._schema.arguments):
        return False  # view.dtype, mm.dtype, addmm.dtype: named like an NPU op, no NPU kernel
    values = [a.meta.get("val") for a in node.all_input_nodes]
    out = node.meta.get("val")
    values += list(out) if isinstance(out, (list, tuple)) else [out]
    return all(isinstance(v, torch.Tensor) and v.dtype in NPU_DTYPES for v in values)


class NpuSupport(OperatorSupport):
    def is_node_supported(self, submodules, node) -> bool:
        return is_npu_node(node)


def delegate_to_npu(ep: ExportedProgram) -> ExportedProgram:
    gm = ep.graph_module
    partitioner = CapabilityBasedPartitioner(gm, NpuSupport(), allows_single_node_partition=True)
    gm = partitioner.fuse_partitions(partitioner.propose_partitions())
    graph = gm.graph
    for call in [n for n in graph.nodes if n.op == "call_module"]:
        sub = gm.get_submodule(call.target)
        out = sub.graph.output_node()
        if isinstance(out.args[0], torch.fx.Node):  # one output: make it a tuple, so every use is a getitem
            out.args = ((out.args[0],),)
            sub.recompile()
            with graph.inserting_after(call):
                first = graph.call_function(operator.getitem, (call, 0))
            call.replace_all_uses_with(first, delete_user_cb=lambda user: user is not first)
        fakes = [a.meta["val"] for a in call.args]
        program = pack(sub)
        with graph.inserting_before(call):
            run = graph.call_function(RUN, (program, list(call.args)))
        with torch._guards.detect_fake_mode(fakes):
            run.meta["val"] = RUN(program, fakes)
        for user in list(call.users):
            user.meta["val"] = run.meta["val"][user.args[1]]
        call.replace_all_uses_with(run)
        graph.erase_node(call)
        delattr(gm, call.target)
    # a new signature naming the nodes the graph has now (the partitioner renamed a placeholder called `input`)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    sig = ep.graph_signature
    sig.input_specs = [InputSpec(kind=s.kind, arg=TensorArgument(name=n.name), target=s.target, persistent=s.persistent)
                       for s, n in zip(sig.input_specs, placeholders)]
    sig.output_specs = [OutputSpec(kind=s.kind, arg=TensorArgument(name=n.name), target=s.target)
                        for s, n in zip(sig.output_specs, graph.output_node().args[0])]
    graph.lint()
    gm.recompile()
    return ep


def lower(model, example_inputs) -> ExportedProgram:
    ep = export_for_npu(model, example_inputs)
    legalise(ep.graph_module)
    return delegate_to_npu(ep)
