"""PT2E quantization (torchao 0.18), imported once and quietly: kata 9's stub, reference and checks import it from here.

torch 2.13 no longer ships `torch.ao.quantization.quantize_pt2e` (ModuleNotFoundError); the same flow lives in
`torchao.quantization.pt2e`. Importing torchao on a CPU-only machine prints two "Failed to load ..._C_*.so"
lines (kernels for GPUs this kata never uses) and a deprecation line from torch's pytree; neither belongs in a
learner's output, so the extensions are skipped and both loggers are turned down before the import.
"""
from __future__ import annotations

import logging
import os

os.environ.setdefault("TORCHAO_FORCE_SKIP_LOADING_SO_FILES", "1")  # GPU kernels only; the PT2E flow is Python
for _name in ("torchao", "torch.utils._pytree"):
    logging.getLogger(_name).setLevel(logging.ERROR)

from torchao.quantization.pt2e.observer import (  # noqa: E402 - after the quieting above
    HistogramObserver,
    MinMaxObserver,
    PerChannelMinMaxObserver,
)
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e  # noqa: E402
from torchao.quantization.pt2e.quantizer import (  # noqa: E402
    QuantizationAnnotation,
    QuantizationSpec,
    Quantizer,
    SharedQuantizationSpec,
)

import torch  # noqa: E402

# The ops convert_pt2e writes (torch.ops.quantized_decomposed, registered by torchao).
QUANTIZE_PER_TENSOR = torch.ops.quantized_decomposed.quantize_per_tensor.default
DEQUANTIZE_PER_TENSOR = torch.ops.quantized_decomposed.dequantize_per_tensor.default
QUANTIZE_PER_CHANNEL = torch.ops.quantized_decomposed.quantize_per_channel.default
DEQUANTIZE_PER_CHANNEL = torch.ops.quantized_decomposed.dequantize_per_channel.default

__all__ = [
    "DEQUANTIZE_PER_CHANNEL", "DEQUANTIZE_PER_TENSOR", "HistogramObserver", "MinMaxObserver",
    "PerChannelMinMaxObserver", "QUANTIZE_PER_CHANNEL", "QUANTIZE_PER_TENSOR", "QuantizationAnnotation",
    "QuantizationSpec", "Quantizer", "SharedQuantizationSpec", "convert_pt2e", "prepare_pt2e",
]
