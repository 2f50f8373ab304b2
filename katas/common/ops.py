"""The fused op every fusion pass targets: `torch.ops.kata.linear_gelu(x, weight, bias, approximate)`.

Registered with `torch.library.custom_op`, so it is one opaque node in every dialect (Dynamo, make_fx,
export, aot_autograd) and never decomposes. Its CPU kernel is the unfused computation, bit-identical to
eager `F.gelu(F.linear(x, weight, bias), approximate=approximate)`.

It also registers `torch.ops.mylib.gelu`, a user's own custom op that is merely *called* gelu (kata 4).
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F


class CallCounter:
    """How many times the fused op's real kernel ran; checks use it to prove a fused graph really runs fused."""

    def __init__(self) -> None:
        self.count = 0

    def reset(self) -> None:
        self.count = 0


LINEAR_GELU_CALLS = CallCounter()


@torch.library.custom_op("kata::linear_gelu", mutates_args=())
def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], approximate: str = "none") -> torch.Tensor:
    LINEAR_GELU_CALLS.count += 1
    return F.gelu(F.linear(x, weight, bias), approximate=approximate)


@linear_gelu.register_fake
def _linear_gelu_fake(x, weight, bias, approximate="none"):
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


def _setup_context(ctx, inputs, output):
    x, weight, bias, approximate = inputs
    ctx.save_for_backward(x, weight, bias)
    ctx.approximate = approximate


def _backward(ctx, grad):
    x, weight, bias = ctx.saved_tensors
    with torch.enable_grad():
        x_, w_ = x.detach().requires_grad_(), weight.detach().requires_grad_()
        b_ = bias.detach().requires_grad_() if bias is not None else None
        out = F.gelu(F.linear(x_, w_, b_), approximate=ctx.approximate)
        grads = torch.autograd.grad(out, [t for t in (x_, w_, b_) if t is not None], grad)
    gx, gw = grads[0], grads[1]
    return gx, gw, (grads[2] if bias is not None else None), None


linear_gelu.register_autograd(_backward, setup_context=_setup_context)

LINEAR_GELU = torch.ops.kata.linear_gelu.default


# A user's own custom op that happens to be called `gelu`, in a namespace of its own (kata 4). It computes the
# tanh approximation by hand: torch treats it as one opaque node in every dialect, and the NPU, which runs only
# aten and kata ops, has no kernel for it -- whatever its name says.
@torch.library.custom_op("mylib::gelu", mutates_args=())
def user_gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


@user_gelu.register_fake
def _user_gelu_fake(x):
    return torch.empty_like(x)


USER_GELU = torch.ops.mylib.gelu.default
