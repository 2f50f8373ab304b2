"""Kata 8 — the ahead-of-time path to the NPU. This is the only file you edit for this kata.

Read katas/08_export_aot/README.md first: it walks the path step by step and says what each check proves.
Check your work with `make kata N=8`; ask for a hint with `make hint N=8`.

The device's facts are in katas/common/npu/device.py (NPU_OPS, NPU_DTYPES, KERNELS, canonical_name); its
ahead-of-time runtime, `pack` and the op `torch.ops.npu_aot.run_program`, is in katas/common/npu/aot.py.
"""
from __future__ import annotations

import torch
import torch.fx
from torch.export import ExportedProgram
from torch.fx.passes.operator_support import OperatorSupport

from katas.common.npu import KERNELS, NPU_DTYPES, NPU_OPS, canonical_name  # noqa: F401 - the device's facts
from katas.common.npu.aot import pack  # noqa: F401 - a partition's graph -> the program text run_program takes


# --- Step 1: export, then decompose to the NPU's opset ----------------------------------------------------------
def npu_decomposition_table() -> dict:
    """The table for `ep.run_decompositions(table)`: torch's default decompositions (to core ATen), minus every op
    the NPU runs as it is (its canonical name is in NPU_OPS), so those reach the graph whole."""
    raise NotImplementedError("npu_decomposition_table: README.md, 'Step 1'")


def export_for_npu(model: torch.nn.Module, example_inputs: tuple) -> ExportedProgram:
    """`torch.export.export` of `model` on `example_inputs` with dimension 0 of every input (its batch) dynamic,
    each input's batch its own Dim, then `run_decompositions(npu_decomposition_table())`."""
    raise NotImplementedError("export_for_npu: README.md, 'Step 1'")


# --- Step 2: legalise ------------------------------------------------------------------------------------------
def legalise(gm: torch.fx.GraphModule) -> int:
    """Rewrite the exported graph `gm` in place into ops the NPU accepts; return how many aliases, clones, slices
    and reshapes you removed or rewrote (0 when there was nothing to do; the sym_size nodes nobody reads any more
    do not count).

    - an alias, a clone or a slice that keeps everything is its input under another name: remove it (but keep a
      clone with memory_format=torch.contiguous_format, and every cast);
    - unsqueeze, squeeze, reshape, and a view whose sizes come from `aten.sym_size`, become `aten.view.default`
      with sizes that are plain ints, the one dynamic size (the batch) written as -1."""
    raise NotImplementedError("legalise: README.md, 'Step 2'")


# --- Step 3: what runs on the NPU --------------------------------------------------------------------------------
def is_npu_node(node: torch.fx.Node) -> bool:
    """True when the NPU can run `node`: a call of an op in NPU_OPS, through an overload its kernel in KERNELS takes,
    whose every input is a tensor of an NPU dtype
    (no SymInt computed on the host) and whose outputs are tensors of NPU dtypes. False for placeholders,
    get_attr and the output node."""
    raise NotImplementedError("is_npu_node: README.md, 'Step 3'")


class NpuSupport(OperatorSupport):
    """What CapabilityBasedPartitioner asks: is_npu_node."""

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        return is_npu_node(node)


# --- Step 4: delegate ------------------------------------------------------------------------------------------
def delegate_to_npu(ep: ExportedProgram) -> ExportedProgram:
    """Partition `ep.graph_module` with NpuSupport and replace each partition with one call
    `torch.ops.npu_aot.run_program.default(pack(partition), [its inputs])`; CPU ops stay as they are. Keep the
    graph signature true (README.md, 'The signature') and return `ep`."""
    raise NotImplementedError("delegate_to_npu: README.md, 'Step 4'")


def lower(model: torch.nn.Module, example_inputs: tuple) -> ExportedProgram:
    """The whole path: export_for_npu, legalise its graph, delegate_to_npu. `torch.export.save` must take the result,
    and `torch.export.load` must bring it back in a process that imports only torch and katas.common.npu.aot."""
    raise NotImplementedError("lower: README.md, 'Step 5'")
