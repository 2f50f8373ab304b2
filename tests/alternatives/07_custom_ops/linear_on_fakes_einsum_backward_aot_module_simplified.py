"""Kata 7, a correct attempt by a less obvious road (blind round 1's correct_callback.py, with the in-place rule the
round added: a filter over the users of the match's inputs).

- fake kernel: asks F.linear itself (on the FakeTensors) for the output's metadata, instead of new_empty;
- backward kernel: einsum over any leading dimensions (no reshape), bias gradient summed over every leading dim;
- rewrite: ignore_literals=True with a replacement_callback that reads the GELU's `approximate` from the match,
  two patterns (keyword present / absent), as the README's "With ignore_literals=True ..." sentence describes;
- filter: positions of nodes in graph order, grad-mode switch strictly between the first matched node and the
  insertion point (first reader of the returning nodes, or the node after them when nobody reads them);
- backend: aot_module_simplified directly, with boxed compilers.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.fx
import torch.nn.functional as F


@torch.library.custom_op("npu::linear_gelu", mutates_args=())
def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                approximate: str = "none") -> torch.Tensor:
    return F.gelu(F.linear(x, weight, bias), approximate=approximate)


@linear_gelu.register_fake
def _linear_gelu_fake(x, weight, bias, approximate="none"):
    # F.linear on FakeTensors computes only metadata: shape (symbolic sizes kept), dtype, device.
    return torch.empty_like(F.linear(x, weight, bias))


@torch.library.custom_op("npu::linear_gelu_backward", mutates_args=())
def linear_gelu_backward(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                         approximate: str = "none") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    z = F.linear(x, weight, bias)
    g = torch.ops.aten.gelu_backward(grad, z, approximate=approximate)
    grad_x = torch.matmul(g, weight)
    grad_w = torch.einsum("...o,...i->oi", g, x)
    lead = tuple(range(g.dim() - 1))
    grad_b = g.sum(dim=lead) if lead else g.clone()
    return grad_x, grad_w, grad_b


@linear_gelu_backward.register_fake
def _linear_gelu_backward_fake(grad, x, weight, bias, approximate="none"):
    return torch.empty_like(x), torch.empty_like(weight), weight.new_empty(weight.shape[:1])


def _setup_context(ctx, inputs, output):
    x, weight, bias, approximate = inputs
    ctx.save_for_backward(x, weight, bias)
    ctx.approximate = approximate
    ctx.has_bias = bias is not None


def _backward(ctx, grad):
    x, weight, bias = ctx.saved_tensors
    gx, gw, gb = linear_gelu_backward(grad, x, weight, bias, ctx.approximate)
    return gx, gw, (gb if ctx.has_bias else None), None


linear_gelu.register_autograd(_backward, setup_context=_setup_context)


@torch.library.custom_op("npu::linear_gelu_out", mutates_args=("out",))
def linear_gelu_out(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], out: torch.Tensor,
                    approximate: str = "none") -> None:
    out.copy_(F.gelu(F.linear(x, weight, bias), approximate=approximate))


# --- rewrite ---------------------------------------------------------------------------------------------
def _pattern_kw(x, w, b):
    return torch._C._nn.gelu(torch._C._nn.linear(x, w, b), approximate="none")


def _pattern_plain(x, w, b):
    return torch._C._nn.gelu(torch._C._nn.linear(x, w, b))


_REPLACEMENTS: dict[str, torch.fx.Graph] = {}


def _replacement_graph(approximate: str) -> torch.fx.Graph:
    if approximate not in _REPLACEMENTS:
        def replacement(x, w, b):
            return linear_gelu(x, w, b, approximate)
        _REPLACEMENTS[approximate] = torch.fx.symbolic_trace(replacement).graph
    return _REPLACEMENTS[approximate]


def _gelu_node(match):
    for pn, gn in match.nodes_map.items():
        if pn.op == "call_function" and pn.target is torch._C._nn.gelu:
            return gn
    raise AssertionError("no gelu in the match")


def _callback(match, original_graph, pattern_graph):
    return _replacement_graph(_gelu_node(match).kwargs.get("approximate", "none"))


def _is_grad_switch(n: torch.fx.Node) -> bool:
    return n.op == "call_function" and n.target is torch._C._set_grad_enabled


def no_grad_mode_switch(match, original_graph, pattern_graph) -> bool:
    order = {n: i for i, n in enumerate(original_graph.nodes)}
    inner = [n for n in match.nodes_map.values()
             if isinstance(n, torch.fx.Node) and n not in match.placeholder_nodes and n in order]
    start = min(order[n] for n in inner)
    readers = [u for r in match.returning_nodes for u in r.users]
    if readers:
        stop = min(order[u] for u in readers)
    else:
        stop = max(order[r] for r in match.returning_nodes) + 1
    nodes = list(original_graph.nodes)
    return not any(_is_grad_switch(n) for n in nodes[start + 1:stop])


_IN_PLACE_OPERATORS = {"iadd", "isub", "imul", "itruediv", "ifloordiv", "ipow", "setitem"}


def _is_in_place_on(user: torch.fx.Node, value: torch.fx.Node) -> bool:
    if user.op == "call_method":
        return user.target.endswith("_") and not user.target.endswith("__") and user.args[0] is value
    if user.op == "call_function":
        if user.kwargs.get("out") is value:
            return True
        name = getattr(user.target, "__name__", "")
        return bool(user.args) and user.args[0] is value and (name in _IN_PLACE_OPERATORS or name.endswith("_")
                                                              or user.kwargs.get("inplace") is True)
    return False


def no_in_place_write(match, original_graph, pattern_graph) -> bool:
    order = {n: i for i, n in enumerate(original_graph.nodes)}
    inner = [n for n in match.nodes_map.values()
             if isinstance(n, torch.fx.Node) and n not in match.placeholder_nodes and n in order]
    start = min(order[n] for n in inner)
    readers = [u for r in match.returning_nodes for u in r.users]
    stop = min(order[u] for u in readers) if readers else max(order[r] for r in match.returning_nodes) + 1
    if any(getattr(r.meta.get("example_value"), "requires_grad", True) for r in match.returning_nodes):
        stop = len(order)  # autograd records the fused op: it saves its inputs, so a later write breaks backward
    values = [v for v in match.placeholder_nodes if isinstance(v, torch.fx.Node)]
    for value in list(values):  # an input that is a view (t = s[0]) shares its memory with its base s, and so
        while value.args and isinstance(value.args[0], torch.fx.Node) and _shares_memory_of_first_argument(value):
            value = value.args[0]  # with every other view of s
            if value not in values:
                values.append(value)
    for value in values:  # grows with every view of an input (t[0], t.view(-1), w.t()): it writes there too
        for user in value.users:
            if start < order[user] < stop and _is_in_place_on(user, value):
                return False
            if user.args and user.args[0] is value and _shares_memory_of_first_argument(user) and user not in values:
                values.append(user)
    return True


_VIEWS = {"getitem", "view", "reshape", "t", "transpose", "permute", "narrow", "select", "unsqueeze", "squeeze",
          "flatten", "unflatten", "diagonal", "movedim", "swapaxes", "expand", "detach", "view_as", "as_strided"}


def _shares_memory_of_first_argument(node: torch.fx.Node) -> bool:
    """A view (`t[0]`, `w.T` as getattr), or an in-place write, which returns the tensor it wrote (blind round 6)."""
    if node.op == "call_function" and node.target is getattr:
        return len(node.args) > 1 and node.args[1] in ("T", "mT", "H", "mH")
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    return name in _VIEWS or (isinstance(node.args[0], torch.fx.Node) and _is_in_place_on(node, node.args[0]))


def fuse_with_rewriter(gm: torch.fx.GraphModule) -> int:
    from torch.fx.subgraph_rewriter import replace_pattern_with_filters
    total = 0
    for pattern in (_pattern_kw, _pattern_plain):
        total += len(replace_pattern_with_filters(gm, pattern, None, [no_grad_mode_switch, no_in_place_write],
                                                  ignore_literals=True, replacement_callback=_callback))
    return total


def npu_training_backend(gm: torch.fx.GraphModule, example_inputs: list):
    from functorch.compile import make_boxed_func
    from torch._functorch.aot_autograd import aot_module_simplified

    fuse_with_rewriter(gm)

    def compiler(g, _inputs):
        return make_boxed_func(g.forward)

    return aot_module_simplified(gm, example_inputs, fw_compiler=compiler, bw_compiler=compiler)
