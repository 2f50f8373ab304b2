"""Kata 7 — the vendor kernel's op, and fusion that survives training. This is the only file you edit for this kata.

Read katas/07_custom_ops/README.md first: it builds the op step by step and says what each check proves.
Check your work with `make kata N=7`; ask for a hint with `make hint N=7`.

The checks find your ops by the names below (linear_gelu, linear_gelu_backward, linear_gelu_out), each being what
`torch.library.custom_op` returns. Use the namespace "npu" (`"npu::linear_gelu"`).
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.fx
import torch.nn.functional as F  # noqa: F401 - the kernels compute with F.linear and F.gelu


# --- Step 1: the op. Make this a custom op: @torch.library.custom_op("npu::linear_gelu", mutates_args=()) ---
def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                approximate: str = "none") -> torch.Tensor:
    """gelu(x @ weight.T + bias, approximate): the vendor's fused kernel. Here it runs on the CPU and must give
    exactly what `F.gelu(F.linear(x, weight, bias), approximate=approximate)` gives, for any leading dimensions.

    Step 2: register a fake kernel (`@linear_gelu.register_fake`) that returns an empty tensor of the output's
    shape and dtype, computed from the inputs' sizes without turning them into ints.
    Step 3: `linear_gelu.register_autograd(backward, setup_context=...)`, whose backward calls linear_gelu_backward.
    """
    raise NotImplementedError("linear_gelu: README.md, 'Step 1: the op'")


# --- Step 3: the backward kernel, a custom op of its own ("npu::linear_gelu_backward") ---------------------------
def linear_gelu_backward(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                         approximate: str = "none") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(grad_x, grad_weight, grad_bias) of linear_gelu for the output gradient `grad`. grad_bias always has shape
    (out_features,); linear_gelu's backward drops it when there was no bias. Needs a fake kernel too."""
    raise NotImplementedError("linear_gelu_backward: README.md, 'Step 3: autograd'")


# --- Step 4: an out= variant ("npu::linear_gelu_out"): writes into `out`, returns None ---------------------------
def linear_gelu_out(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], out: torch.Tensor,
                    approximate: str = "none") -> None:
    """Write linear_gelu(x, weight, bias, approximate) into `out`, a buffer of the output's shape the caller
    allocated. Declare what it writes: README.md, 'Step 4: an out= variant'."""
    raise NotImplementedError("linear_gelu_out: README.md, 'Step 4: an out= variant'")


# --- Step 5: the rewrite ------------------------------------------------------------------------------------
def fuse_with_rewriter(gm: torch.fx.GraphModule) -> int:
    """Replace every Linear -> GELU pair of a Dynamo graph (torch._C._nn.linear -> torch._C._nn.gelu) that is safe
    to fuse with one call of linear_gelu, using torch.fx.subgraph_rewriter.replace_pattern_with_filters.

    Rewrites `gm` in place, recompiles it, and returns the number of pairs fused; a second call returns 0.
    README.md, 'Step 5: the rewrite' lists every form a pair takes and which pairs are safe."""
    raise NotImplementedError("fuse_with_rewriter: README.md, 'Step 5: the rewrite'")


# --- Step 6: training ---------------------------------------------------------------------------------------
def npu_training_backend(gm: torch.fx.GraphModule, example_inputs: list):
    """A torch.compile backend for training: fuse with fuse_with_rewriter, then compile forward and backward with
    aot_autograd (`torch._dynamo.backends.common.aot_autograd`). Returns what aot_autograd returns.

    In the compiled training step, the forward pass runs linear_gelu and the backward pass linear_gelu_backward for
    every pair fused. README.md, 'Step 6: training'."""
    raise NotImplementedError("npu_training_backend: README.md, 'Step 6: training'")
