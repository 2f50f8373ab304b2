"""A different correct attempt at kata 7, written in blind round 6 (2026-12-07) from the lesson alone (the round's
correct.py).

- forward kernel: matmul on the flattened x, then `+ bias`, then F.gelu, all in x's dtype (lesson: "A kernel that
  computes in x's dtype in its own order (matmul, then `+ bias`; a GELU derivative written out) may differ by
  rounding");
- backward kernel: the GELU derivative written out by hand, in x's dtype;
- rewrite: two patterns (keyword / no keyword) with ignore_literals=True and a replacement_callback reading the
  GELU's `approximate`; replacement graphs built by hand;
- grad-mode filter compares the mode at the Linear, the GELU and the insertion point (fuses across a closed block);
- in-place filter decides "shares memory" by the storage of Dynamo's example values, falling back to view chains.
"""
from __future__ import annotations

import math
import operator
from typing import Optional

import torch
import torch.fx
import torch.nn.functional as F  # noqa: F401

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_K_TANH = math.sqrt(2.0 / math.pi)
_C_TANH = 0.044715


def _preact(x, weight, bias):
    """z = x @ weight.T + bias on the flattened x, in x's dtype: (N, out)."""
    x2 = x.reshape(-1, x.shape[-1])
    z = torch.matmul(x2, weight.t())
    if bias is not None:
        z = z + bias
    return z


def _forward_kernel(x, weight, bias, approximate):
    z = _preact(x, weight, bias)
    y = F.gelu(z, approximate=approximate)
    return y.reshape(*x.shape[:-1], weight.shape[0])


def _gelu_grad(z, approximate):
    if approximate == "tanh":
        inner = _K_TANH * (z + _C_TANH * z * z * z)
        t = torch.tanh(inner)
        d_inner = _K_TANH * (1.0 + 3.0 * _C_TANH * z * z)
        return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * d_inner
    if approximate != "none":
        raise ValueError(f"approximate must be 'none' or 'tanh', not {approximate!r}")
    cdf = 0.5 * (1.0 + torch.erf(z * _SQRT1_2))
    pdf = torch.exp(-0.5 * z * z) * _INV_SQRT_2PI
    return cdf + z * pdf


# --- Step 1 ---------------------------------------------------------------------------------------------------
@torch.library.custom_op("npu::linear_gelu", mutates_args=())
def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                approximate: str = "none") -> torch.Tensor:
    return _forward_kernel(x, weight, bias, approximate)


@linear_gelu.register_fake
def _linear_gelu_fake(x, weight, bias, approximate="none"):
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


# --- Step 3 ---------------------------------------------------------------------------------------------------
@torch.library.custom_op("npu::linear_gelu_backward", mutates_args=())
def linear_gelu_backward(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                         approximate: str = "none") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    out_features = weight.shape[0]
    z = _preact(x, weight, bias)
    g = grad.reshape(-1, out_features) * _gelu_grad(z, approximate)
    x2 = x.reshape(-1, x.shape[-1])
    grad_x = torch.matmul(g, weight).reshape(x.shape)
    grad_w = torch.matmul(g.t(), x2)
    grad_b = g.sum(dim=0)
    return grad_x, grad_w, grad_b


@linear_gelu_backward.register_fake
def _linear_gelu_backward_fake(grad, x, weight, bias, approximate="none"):
    return x.new_empty(x.shape), weight.new_empty(weight.shape), weight.new_empty((weight.shape[0],))


def _setup_context(ctx, inputs, output):
    x, weight, bias, *rest = inputs
    ctx.approximate = rest[0] if rest else "none"
    ctx.has_bias = bias is not None
    ctx.save_for_backward(x, weight, bias)


def _backward(ctx, grad):
    x, weight, bias = ctx.saved_tensors
    grad_x, grad_w, grad_b = linear_gelu_backward(grad, x, weight, bias, ctx.approximate)
    return grad_x, grad_w, (grad_b if ctx.has_bias else None), None


linear_gelu.register_autograd(_backward, setup_context=_setup_context)


# --- Step 4 ---------------------------------------------------------------------------------------------------
@torch.library.custom_op("npu::linear_gelu_out", mutates_args=("out",))
def linear_gelu_out(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], out: torch.Tensor,
                    approximate: str = "none") -> None:
    out.copy_(_forward_kernel(x, weight, bias, approximate))


# --- Step 5 ---------------------------------------------------------------------------------------------------
_LINEAR = torch._C._nn.linear
_GELU = torch._C._nn.gelu


def _pattern_kw(x, w, b):
    return torch._C._nn.gelu(torch._C._nn.linear(x, w, b), approximate="none")


def _pattern_plain(x, w, b):
    return torch._C._nn.gelu(torch._C._nn.linear(x, w, b))


def _replacement_graph(approximate: str) -> torch.fx.Graph:
    g = torch.fx.Graph()
    x = g.placeholder("x")
    w = g.placeholder("w")
    b = g.placeholder("b")
    out = g.call_function(torch.ops.npu.linear_gelu.default, (x, w, b, approximate))
    g.output(out)
    return g


def _gelu_node(match):
    for pn, gn in match.nodes_map.items():
        if pn.op == "call_function" and pn.target is _GELU:
            return gn
    raise RuntimeError("no gelu in match")


def _linear_node(match):
    for pn, gn in match.nodes_map.items():
        if pn.op == "call_function" and pn.target is _LINEAR:
            return gn
    raise RuntimeError("no linear in match")


def _approximate_of(gelu_node) -> str:
    if "approximate" in gelu_node.kwargs:
        return gelu_node.kwargs["approximate"]
    if len(gelu_node.args) > 1:
        return gelu_node.args[1]
    return "none"


def _replace_callback(match, original_graph, pattern_graph):
    return _replacement_graph(_approximate_of(_gelu_node(match)))


def _insertion_point(match, graph):
    readers = set()
    for n in match.returning_nodes:
        readers.update(n.users)
    if readers:
        for n in graph.nodes:
            if n in readers:
                return n
    nxt = None
    for n in reversed(graph.nodes):
        if n in match.returning_nodes:
            return nxt
        nxt = n
    return None


def _is_grad_switch(n) -> bool:
    return n.op == "call_function" and n.target is torch._C._set_grad_enabled


def _grad_modes(graph):
    """Mode in force at each node: 'entry' (unknown, as at the graph's call) or a bool set by a switch."""
    # Dynamo writes a switch only where the mode changes, so the first switch tells the mode at entry.
    switches = [n for n in graph.nodes if _is_grad_switch(n)]
    mode = "entry" if not switches else not bool(switches[0].args[0])
    modes = {}
    for n in graph.nodes:
        modes[n] = mode
        if _is_grad_switch(n):
            mode = bool(n.args[0]) if n.args else bool(n.kwargs.get("mode"))
    return modes


def same_grad_mode(match, original_graph, pattern_graph) -> bool:
    modes = _grad_modes(original_graph)
    lin, gel = _linear_node(match), _gelu_node(match)
    at = _insertion_point(match, original_graph)
    return modes[lin] == modes[gel] == modes[at]


_INPLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                      operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor, operator.ilshift,
                      operator.irshift, operator.imatmul, operator.iconcat, operator.setitem}
_VIEW_METHODS = {"view", "view_as", "t", "transpose", "permute", "expand", "expand_as", "narrow", "select",
                 "squeeze", "unsqueeze", "unflatten", "as_strided", "diagonal", "detach", "movedim", "swapaxes",
                 "swapdims", "unfold", "split", "chunk", "unbind", "reshape", "flatten", "contiguous", "real",
                 "imag", "T", "mT", "H", "mH", "__getitem__"}
_VIEW_FUNCTIONS = {operator.getitem, torch.transpose, torch.t, torch.permute, torch.select, torch.narrow,
                   torch.squeeze, torch.unsqueeze, torch.reshape, torch.flatten, torch.detach, torch.movedim,
                   torch.swapaxes, torch.swapdims, torch.diagonal, torch.as_strided, torch.split, torch.chunk,
                   torch.unbind, torch.real, torch.imag}


def _written_targets(n):
    """The nodes `n` writes into (in place), as a list."""
    written = []
    out = n.kwargs.get("out")
    if out is not None:
        written.extend(o for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, torch.fx.Node))
    first = n.args[0] if n.args else n.kwargs.get("input", n.kwargs.get("self"))
    if not isinstance(first, torch.fx.Node):
        return written
    if n.op == "call_method":
        if n.target.endswith("_") and not n.target.endswith("__") and n.target != "requires_grad_":
            written.append(first)
    elif n.op == "call_function":
        if n.target in _INPLACE_OPERATORS:
            written.append(first)
        elif getattr(n.target, "__module__", None) != "_operator" and \
                getattr(n.target, "__name__", "").endswith("_") and not getattr(n.target, "__name__", "").endswith("__"):
            written.append(first)
    if n.op in ("call_function", "call_method", "call_module") and n.kwargs.get("inplace") is True:
        written.append(first)
    return written


def _view_roots(graph):
    roots = {}
    for n in graph.nodes:
        base = n.args[0] if n.args else None
        is_view = (n.op == "call_method" and n.target in _VIEW_METHODS) or \
                  (n.op == "call_function" and n.target in _VIEW_FUNCTIONS) or \
                  (n.op == "call_function" and n.target is getattr and len(n.args) > 1 and
                   n.args[1] in ("T", "mT", "H", "mH", "data", "real", "imag"))
        roots[n] = roots.get(base, base) if is_view and isinstance(base, torch.fx.Node) else n
    return roots


def _storage_key(n):
    ev = n.meta.get("example_value") if isinstance(n, torch.fx.Node) else None
    if isinstance(ev, torch.Tensor):
        try:
            from torch.multiprocessing.reductions import StorageWeakRef
            return StorageWeakRef(ev.untyped_storage())
        except Exception:
            return None
    return None


def _shares_memory(a, b, roots) -> bool:
    ka, kb = _storage_key(a), _storage_key(b)
    if ka is not None and kb is not None:
        return ka == kb
    return roots.get(a, a) is roots.get(b, b)


def no_write_into_inputs(match, original_graph, pattern_graph) -> bool:
    inputs = [p for p in match.placeholder_nodes if isinstance(p, torch.fx.Node)]
    if not inputs:
        return True
    roots = _view_roots(original_graph)
    gel = _gelu_node(match)
    ev = gel.meta.get("example_value")
    recorded = bool(getattr(ev, "requires_grad", True))  # unknown: assume recorded (refuse more, never less)
    start = _linear_node(match)
    stop = None if recorded else _insertion_point(match, original_graph)
    inside = False
    for n in original_graph.nodes:
        if n is start:
            inside = True
            continue
        if not inside:
            continue
        if n is stop:
            break
        for t in _written_targets(n):
            if any(_shares_memory(t, p, roots) for p in inputs):
                return False
    return True


def fuse_with_rewriter(gm: torch.fx.GraphModule) -> int:
    from torch.fx.subgraph_rewriter import replace_pattern_with_filters
    fused = 0
    for pattern in (_pattern_kw, _pattern_plain):
        done = replace_pattern_with_filters(gm, pattern, None, match_filters=[same_grad_mode, no_write_into_inputs],
                                            ignore_literals=True, replacement_callback=_replace_callback)
        fused += len(done)
    return fused


# --- Step 6 ---------------------------------------------------------------------------------------------------
def npu_training_backend(gm: torch.fx.GraphModule, example_inputs: list):
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    fuse_with_rewriter(gm)

    def compiler(g, _inputs):
        return make_boxed_func(g.forward)

    return aot_autograd(fw_compiler=compiler, bw_compiler=compiler)(gm, example_inputs)
