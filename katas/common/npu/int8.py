"""The NPU's int8 mode as torch ops (kata 9): `torch.ops.kata.int8_linear` and `torch.ops.kata.int8_add`.

A graph lowered for the int8 NPU calls these ops where the quantized graph had a dequantize -> op -> quantize
pattern. Calling one runs it *on the NPU*: the op compiles a one-node program for the device (once per input
signature and scalar arguments, the oldest released past KEPT_PROGRAMS) and runs it there, so every int8 op
a model executes is one launch in `npu.DEVICE.stats` (ops_run["int8_linear"], ops_run["int8_add"]). The
arithmetic is the device's (katas/common/npu/device.py: int8_linear_kernel, int8_add_kernel): int32 accumulation,
requantization rounded to nearest, saturation to [-128, 127].

    int8_linear(x, x_scale, x_zero_point, weight, weight_scale, bias, out_scale, out_zero_point, relu=False)
        x: int8 activations, quantized per tensor (x_scale, x_zero_point);
        weight: int8 [out, in], symmetric (zero point 0), one float32 scale per output channel (weight_scale);
        bias: float32 [out] or None (the device rounds it to int32 at x_scale * weight_scale);
        returns int8, quantized with (out_scale, out_zero_point); relu=True clamps below at out_zero_point.
    int8_add(self, other, scale, zero_point, out_scale, out_zero_point)
        both inputs int8, quantized with the SAME (scale, zero_point); returns int8 with (out_scale,
        out_zero_point).

Both have fake kernels, so a lowered graph can be traced, exported and printed like any other.
"""
from __future__ import annotations

from typing import Any, Optional

import torch
import torch.fx

from katas.common import npu

KEPT_PROGRAMS = 6  # compiled (op, signature) programs kept per process; the device holds MAX_RESIDENT_PROGRAMS

_COMPILED = npu.KeptPrograms(KEPT_PROGRAMS)


def _signature(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.dtype)
    return ("value", type(value).__name__, value)


def _one_node_graph(op: torch._ops.OpOverload, args: list[Any]) -> torch.fx.GraphModule:
    """A program of one node calling `op`: tensors are its inputs, scalars are baked into the program."""
    graph = torch.fx.Graph()
    names = iter(("x", "weight", "weight_scale", "bias") if op is INT8_LINEAR else ("self", "other"))
    node_args = [graph.placeholder(next(names)) if isinstance(a, torch.Tensor) else a for a in args]
    graph.output(graph.call_function(op, tuple(node_args)))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def _program(op: torch._ops.OpOverload, args: list[Any]) -> Any:
    """The NPU program running `op` on arguments shaped like `args`; compiled on first use, then kept."""
    key = (str(op), tuple(_signature(a) for a in args))
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    name = op.__name__.split(".")[0]
    return _COMPILED.get(key, lambda: npu.NPU.compile(_one_node_graph(op, args), tensors, name=name))


def _run(op: torch._ops.OpOverload, args: list[Any]) -> torch.Tensor:
    tensors = [a.detach().contiguous() for a in args if isinstance(a, torch.Tensor)]
    return _program(op, args)(*tensors)


def release_all() -> None:
    """Release every program this process compiled for the int8 ops."""
    _COMPILED.release_all()


@torch.library.custom_op("kata::int8_linear", mutates_args=())
def int8_linear(x: torch.Tensor, x_scale: float, x_zero_point: int, weight: torch.Tensor,
                weight_scale: torch.Tensor, bias: Optional[torch.Tensor], out_scale: float, out_zero_point: int,
                relu: bool = False) -> torch.Tensor:
    """One int8 linear (and optional relu) on the NPU; see the module docstring for the arguments."""
    return _run(INT8_LINEAR, [x, float(x_scale), int(x_zero_point), weight, weight_scale, bias, float(out_scale),
                              int(out_zero_point), bool(relu)])


@int8_linear.register_fake
def _int8_linear_fake(x, x_scale, x_zero_point, weight, weight_scale, bias, out_scale, out_zero_point, relu=False):
    return x.new_empty((*x.shape[:-1], weight.shape[0]), dtype=torch.int8)


@torch.library.custom_op("kata::int8_add", mutates_args=())
def int8_add(self: torch.Tensor, other: torch.Tensor, scale: float, zero_point: int, out_scale: float,
             out_zero_point: int) -> torch.Tensor:
    """One int8 add on the NPU; both inputs must be quantized with the same (scale, zero_point)."""
    return _run(INT8_ADD, [self, other, float(scale), int(zero_point), float(out_scale), int(out_zero_point)])


@int8_add.register_fake
def _int8_add_fake(self, other, scale, zero_point, out_scale, out_zero_point):
    return torch.empty(torch.broadcast_shapes(self.shape, other.shape), dtype=torch.int8, device=self.device)


INT8_LINEAR = torch.ops.kata.int8_linear.default
INT8_ADD = torch.ops.kata.int8_add.default
