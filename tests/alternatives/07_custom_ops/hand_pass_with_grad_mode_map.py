"""A different correct attempt at kata 7, written without looking at the reference's internals.

- The ops: the GELU derivative written out from its formulas (no aten.gelu_backward), bias gradients summed over
  every leading dimension at once, fake kernels built with torch.empty(..., dtype=, device=).
- The rewrite: a hand-written pass instead of replace_pattern. It computes the grad mode at every node and fuses a
  pair where the GELU was, when the Linear and the GELU run in the same grad mode. It therefore fuses two pairs the
  rewriter must refuse, a pair inside a no_grad block whose reader is after it and a pair whose reader is inside a
  later block, which the lesson allows.
- It fuses where the GELU was, so only an in-place write into the Linear's input between the Linear and the GELU
  can change what the fused op reads: such a pair is refused. A write after the GELU changes no value, but when
  autograd records the pair (the GELU's example value requires grad) the fused op saves its inputs for backward:
  any later write into one refuses it too.
- The backend: aot_autograd with make_boxed_func compilers, fused first.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.fx
import torch.nn.functional as F
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd


@torch.library.custom_op("npu::linear_gelu", mutates_args=())
def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                approximate: str = "none") -> torch.Tensor:
    pre = torch.matmul(x, weight.t())
    if bias is not None:
        pre = pre + bias
    return F.gelu(pre, approximate=approximate)


@linear_gelu.register_fake
def _(x, weight, bias, approximate="none"):
    return torch.empty(x.shape[:-1] + weight.shape[:1], dtype=x.dtype, device=x.device)


def _gelu_derivative(z: torch.Tensor, approximate: str) -> torch.Tensor:
    if approximate == "tanh":
        k = math.sqrt(2.0 / math.pi)
        inner = k * (z + 0.044715 * z ** 3)
        t = torch.tanh(inner)
        return 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * k * (1 + 3 * 0.044715 * z * z)
    cdf = 0.5 * (1 + torch.erf(z / math.sqrt(2.0)))
    pdf = torch.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return cdf + z * pdf


@torch.library.custom_op("npu::linear_gelu_backward", mutates_args=())
def linear_gelu_backward(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                         approximate: str = "none") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    z = torch.matmul(x, weight.t()) + (bias if bias is not None else 0)
    dz = grad * _gelu_derivative(z, approximate)
    lead = tuple(range(dz.dim() - 1))
    grad_weight = torch.einsum("...o,...i->oi", dz, x)
    grad_bias = dz.sum(dim=lead) if lead else dz.clone()
    return torch.matmul(dz, weight), grad_weight, grad_bias


@linear_gelu_backward.register_fake
def _(grad, x, weight, bias, approximate="none"):
    return (torch.empty(x.shape, dtype=x.dtype, device=x.device), torch.empty(weight.shape, dtype=x.dtype,
            device=x.device), torch.empty(weight.shape[:1], dtype=x.dtype, device=x.device))


def _save(ctx, inputs, output):
    x, weight, bias, approximate = inputs
    ctx.save_for_backward(x, weight, bias)
    ctx.approximate = approximate
    ctx.bias_given = bias is not None


def _grad(ctx, grad):
    x, weight, bias = ctx.saved_tensors
    gx, gw, gb = torch.ops.npu.linear_gelu_backward(grad, x, weight, bias, ctx.approximate)
    return gx, gw, (gb if ctx.bias_given else None), None


linear_gelu.register_autograd(_grad, setup_context=_save)


@torch.library.custom_op("npu::linear_gelu_out", mutates_args=["out"])
def linear_gelu_out(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], out: torch.Tensor,
                    approximate: str = "none") -> None:
    out.copy_(linear_gelu(x, weight, bias, approximate))


def _grad_mode_at(graph: torch.fx.Graph) -> dict[torch.fx.Node, bool]:
    # the mode the graph starts in is the opposite of what its first switch sets: a model called under no_grad
    # starts with grad off, and Dynamo writes no switch for that (blind round 6)
    first = next((n for n in graph.nodes if n.op == "call_function" and n.target is torch._C._set_grad_enabled), None)
    mode, modes = True if first is None else not bool(first.args[0]), {}
    for node in graph.nodes:
        if node.op == "call_function" and node.target is torch._C._set_grad_enabled:
            mode = bool(node.args[0])
        modes[node] = mode
    return modes


_IN_PLACE_FUNCTIONS = {"iadd", "isub", "imul", "itruediv", "setitem"}


def _writes_into(node: torch.fx.Node) -> Optional[torch.fx.Node]:
    """The node whose tensor `node` writes in place, or None."""
    if node.op == "call_function" and isinstance(node.kwargs.get("out"), torch.fx.Node):
        return node.kwargs["out"]
    if not node.args:
        return None
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    in_place = (node.op == "call_method" and name.endswith("_") and not name.startswith("_")) or (
        node.op == "call_function" and (name in _IN_PLACE_FUNCTIONS or node.kwargs.get("inplace", False)
                                        or (name.endswith("_") and not name.startswith("_"))))
    return node.args[0] if in_place else None


_VIEWS = {"getitem", "view", "reshape", "t", "transpose", "permute", "narrow", "select", "unsqueeze", "squeeze",
          "flatten", "unflatten", "diagonal", "movedim", "swapaxes", "expand", "detach", "view_as", "as_strided"}


def _shares_first_argument(node) -> bool:
    """A view of its first argument, `w.T` (getattr), or an in-place write, which returns the tensor it wrote."""
    if node.op == "call_function" and node.target is getattr:
        return len(node.args) > 1 and node.args[1] in ("T", "mT", "H", "mH")
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    return name in _VIEWS or _writes_into(node) is node.args[0]


def _memory_of(node):
    """The tensor whose memory `node` is: itself, or for a view (t[0], t.view(-1), w.t(), w.T) or what an in-place
    write returned (a = t.mul_(1.0)) the tensor it shares."""
    while isinstance(node, torch.fx.Node) and node.args and isinstance(node.args[0], torch.fx.Node) and (
            _shares_first_argument(node)):
        node = node.args[0]
    return node


def fuse_with_rewriter(gm: torch.fx.GraphModule) -> int:
    modes = _grad_mode_at(gm.graph)
    order = {node: i for i, node in enumerate(gm.graph.nodes)}
    writes = [(order[node], _writes_into(node)) for node in gm.graph.nodes if _writes_into(node) is not None]
    pairs = []
    for gelu in gm.graph.nodes:
        if gelu.op != "call_function" or gelu.target is not torch._C._nn.gelu:
            continue
        linear = gelu.args[0]
        if not (isinstance(linear, torch.fx.Node) and linear.target is torch._C._nn.linear):
            continue
        if len(linear.users) != 1 or modes[linear] != modes[gelu]:
            continue
        inputs = [a for a in (*linear.args, *linear.kwargs.values()) if isinstance(a, torch.fx.Node)]
        # fused where the GELU was, the op reads its inputs there; when autograd records it (its output requires
        # grad), it also saves them for backward, so a write anywhere after the Linear breaks that backward
        recorded = getattr(gelu.meta.get("example_value"), "requires_grad", True)
        end = len(order) if recorded else order[gelu]
        memories = {_memory_of(node) for node in inputs}  # t = s[0] is s's memory: a write into s reaches t too
        if any(order[linear] < at < end and _memory_of(written) in memories for at, written in writes):
            continue
        pairs.append((linear, gelu))
    for linear, gelu in pairs:
        x, weight = linear.args[0], linear.args[1]
        bias = linear.args[2] if len(linear.args) > 2 else linear.kwargs.get("bias")
        with gm.graph.inserting_before(gelu):
            fused = gm.graph.call_function(torch.ops.npu.linear_gelu.default,
                                           (x, weight, bias, gelu.kwargs.get("approximate", "none")))
        fused.meta = dict(gelu.meta)
        gelu.replace_all_uses_with(fused)
        gm.graph.erase_node(gelu)
        gm.graph.erase_node(linear)
    gm.graph.lint()
    gm.recompile()
    return len(pairs)


def npu_training_backend(gm: torch.fx.GraphModule, example_inputs: list):
    fuse_with_rewriter(gm)
    return aot_autograd(fw_compiler=lambda g, _: make_boxed_func(g.forward),
                        bw_compiler=lambda g, _: make_boxed_func(g.forward))(gm, example_inputs)
