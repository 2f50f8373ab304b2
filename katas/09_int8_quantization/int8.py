"""Kata 9 — int8 for the NPU. This is the only file you edit for this kata.

Read katas/09_int8_quantization/README.md first: it walks the path step by step and says what each check proves.
Check your work with `make kata N=9`; ask for a hint with `make hint N=9`.

The PT2E pieces (torchao 0.18) are imported quietly from katas/common/pt2e.py. The int8 ops you lower to,
`torch.ops.kata.int8_linear` and `torch.ops.kata.int8_add`, are in katas/common/npu/int8.py; the arithmetic they
run on the NPU is in katas/common/npu/device.py (int8_linear_kernel, int8_add_kernel).
"""
from __future__ import annotations

from typing import Callable, Iterable, Sequence

import torch
import torch.fx

from katas.common.npu import NPU_INT8_OPS  # noqa: F401 - what the int8 unit runs
from katas.common.npu.int8 import INT8_ADD, INT8_LINEAR  # noqa: F401 - the ops a lowered graph calls
from katas.common.pt2e import (  # noqa: F401 - the PT2E flow and the ops convert_pt2e writes
    DEQUANTIZE_PER_CHANNEL,
    DEQUANTIZE_PER_TENSOR,
    QUANTIZE_PER_TENSOR,
    MinMaxObserver,
    PerChannelMinMaxObserver,
    QuantizationAnnotation,
    QuantizationSpec,
    Quantizer,
    SharedQuantizationSpec,
    convert_pt2e,
    prepare_pt2e,
)


# --- Step 1: the Quantizer -------------------------------------------------------------------------------------
class NPUQuantizer(Quantizer):
    """Says which values of an exported graph the int8 NPU reads and writes as int8, and how they are quantized.

    `keep_float` (the sensitivity step, README.md, 'When one layer ruins the model'): names of layers -- the
    linear or add nodes of the exported graph, as `node.name` gives them -- that annotate() leaves float."""

    def __init__(self, keep_float: Iterable[str] = ()) -> None:
        super().__init__()
        self.keep_float = frozenset(keep_float)

    def annotate(self, model: torch.fx.GraphModule) -> torch.fx.GraphModule:
        """Put a QuantizationAnnotation in `node.meta["quantization_annotation"]` of exactly the nodes the int8 unit
        runs (README.md, 'What the int8 unit runs'), and return `model`:

        - `aten.linear`: input 0 int8 per tensor, input 1 (the weight) int8 symmetric per output channel, the
          output int8 per tensor -- unless the linear's only user is a relu, which then carries the output;
        - `aten.add.Tensor` of two tensors: both inputs observed as one (one scale), the output int8 per tensor.
        The in-place forms (`aten.relu_`, `aten.add_.Tensor`) are the same patterns.
        A layer named in `self.keep_float` gets no annotation at all, and neither does a relu riding on it."""
        raise NotImplementedError("NPUQuantizer.annotate: README.md, 'Step 1'")

    def validate(self, model: torch.fx.GraphModule) -> None:
        """Called by prepare_pt2e after annotate; nothing to check here."""


# --- Step 2: export, prepare, calibrate, convert -----------------------------------------------------------------
def quantize_for_npu(model: torch.nn.Module, example_inputs: tuple, calibration_batches: Iterable[tuple],
                     *, keep_float: Iterable[str] = ()) -> torch.fx.GraphModule:
    """Export `model` with dimension 0 of every input (the batch) dynamic, `prepare_pt2e` its `.module()` with
    NPUQuantizer(keep_float=keep_float), run every batch of `calibration_batches` (each a tuple of inputs; it may be
    a generator, which can be read once) through the prepared model, and return `convert_pt2e` of it: a graph of
    quantize -> dequantize -> float op -> quantize patterns. (`keep_float`: the sensitivity step, Step 5.)"""
    raise NotImplementedError("quantize_for_npu: README.md, 'Step 2'")


# --- Step 3: lowering --------------------------------------------------------------------------------------------
def lower_to_npu_int8(converted: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Replace, in place, every pattern the int8 unit runs with one call of an int8 op, and return the module:

    - dq(x) -> linear(., dq(weight), bias) [-> relu] -> q   becomes  INT8_LINEAR(...) (the weight int8 per
      output channel, its zero points all 0);
    - dq(a), dq(b) -> add -> q   becomes  INT8_ADD(...), only when both dequantize nodes have the same scale and
      zero point (and the add has no alpha).
    Only int8 patterns: a dequantize or quantize of another dtype (uint8) is not the int8 unit's.
    Each int8 op reads the int8 tensor the pattern's dequantize read, and replaces the pattern's quantize. Leave
    every other node as it is (those ops run in float on the CPU)."""
    raise NotImplementedError("lower_to_npu_int8: README.md, 'Step 3'")


# --- Step 4: the metric ------------------------------------------------------------------------------------------
def sqnr(reference: torch.Tensor, actual: torch.Tensor) -> float:
    """Signal-to-quantization-noise ratio in dB: 10 * log10(sum(reference ** 2) / sum((reference - actual) ** 2)),
    computed in float64 whatever the tensors' float dtype, `float("inf")` when the two are exactly equal."""
    raise NotImplementedError("sqnr: README.md, 'Step 4'")


# --- Step 5: the sensitivity step --------------------------------------------------------------------------------
def layer_sensitivity(model: torch.nn.Module, example_inputs: tuple,
                      calibration_batches: Iterable[tuple]) -> list[tuple[str, float]]:
    """[(layer, SQNR in dB), ...] for every layer NPUQuantizer annotates (every linear and every add of two
    tensors, named as its node in the exported graph), in graph order: the SQNR of the model quantized with that
    layer ALONE (every other layer kept float) against the float model, calibrated on every calibration batch and
    measured on every one (the outputs of all batches flattened and concatenated). `calibration_batches` may be a
    generator: read it once."""
    raise NotImplementedError("layer_sensitivity: README.md, 'When one layer ruins the model'")


def choose_float_layers(sensitivity: Sequence[tuple[str, float]], model_sqnr: Callable[[list[str]], float],
                        bar: float = 20.0) -> list[str]:
    """The layers to keep float, by the lesson's rule: rank the layers of `sensitivity` by their SQNR, lowest
    first (equal SQNRs in the order given); return the shortest start of that ranking -- the empty one first --
    with which `model_sqnr(kept)` (the whole model's SQNR with those layers kept float) is at least `bar`; every
    layer if no start is."""
    raise NotImplementedError("choose_float_layers: README.md, 'When one layer ruins the model'")


def quantize_with_sensitivity(model: torch.nn.Module, example_inputs: tuple, calibration_batches: Iterable[tuple],
                              bar: float = 20.0) -> tuple[torch.fx.GraphModule, list[str]]:
    """The sensitivity step, then quantization: measure every layer (layer_sensitivity), choose the layers to keep
    float (choose_float_layers, where model_sqnr quantizes with them kept float and measures the model on every
    calibration batch), and return (the model quantized with those layers kept float, those layers)."""
    raise NotImplementedError("quantize_with_sensitivity: README.md, 'When one layer ruins the model'")
