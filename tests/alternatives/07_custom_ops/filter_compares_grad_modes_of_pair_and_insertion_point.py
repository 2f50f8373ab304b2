"""Kata 7, blind round 1's correct_gradstate.py, mended: the filter compares the grad MODE at the Linear, at the GELU
and at the insertion point (a no_grad block that lies wholly between the pair and its reader changes nothing the
pair computes, so that pair is fused). The round's version compared only the first matched node and the insertion
point, and fused a pair whose GELU alone sat in a no_grad block (tests/mutants/07_custom_ops/
filter_compares_grad_modes_at_the_ends.py). It also refuses a match past an in-place write into its inputs.
Otherwise as correct_callback.py.

Original notes:

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
    """Simulate the grad mode along the graph: accept when the Linear, the GELU and the place the replacement goes
    (the first reader) all run in one grad mode. A closed no_grad block between the pair and its reader changes
    nothing the pair computes, so such a pair is fused (the lesson allows either)."""
    inner = {n for n in match.nodes_map.values()
             if isinstance(n, torch.fx.Node) and n not in match.placeholder_nodes}
    readers = {u for r in match.returning_nodes for u in r.users}
    # the mode the graph starts in: the opposite of what its first switch sets (a model called under no_grad starts
    # with grad off, and Dynamo writes no switch for that); with no switch, every node shares one mode
    first = next((n for n in original_graph.nodes if _is_grad_switch(n)), None)
    mode, modes = True if first is None else not bool(first.args[0]), set()
    for n in original_graph.nodes:
        if n in readers:
            return modes == {mode}
        if n in inner:
            modes.add(mode)
        if _is_grad_switch(n):
            mode = bool(n.args[0])
    return len(modes) == 1


VIEW_NAMES = ("getitem", "view", "reshape", "t", "transpose", "permute", "narrow", "select", "unsqueeze", "squeeze",
              "flatten", "unflatten", "diagonal", "movedim", "swapaxes", "expand", "detach", "view_as",
              "reshape_as", "unfold", "as_strided")

def _aliases_first_argument(n: torch.fx.Node) -> bool:
    """A view of its first argument, `w.T` (getattr), or an in-place write, which returns the tensor it wrote
    (blind round 6: `a = s.mul_(1.0)` is s)."""
    name = n.target if n.op == "call_method" else getattr(n.target, "__name__", "")
    if n.op == "call_function" and n.target is getattr:
        return len(n.args) > 1 and n.args[1] in ("T", "mT", "H", "mH")
    return (name in VIEW_NAMES or (name.endswith("_") and not name.endswith("__"))
            or name in ("iadd", "isub", "imul", "itruediv") or n.kwargs.get("inplace") is True)


def _is_view(n: torch.fx.Node) -> bool:
    return _aliases_first_argument(n)


def no_in_place_write(match, original_graph, pattern_graph) -> bool:
    """No node between the match's first node and its first reader writes in place into one of its inputs."""
    inputs = {n for n in match.placeholder_nodes if isinstance(n, torch.fx.Node)}
    inner = {n for n in match.nodes_map.values() if isinstance(n, torch.fx.Node) and n not in inputs}
    for n in list(inputs):  # an input that is a view shares its memory with what it views (its base): climb up
        while n.args and isinstance(n.args[0], torch.fx.Node) and _is_view(n):
            n = n.args[0]
            inputs.add(n)
    for n in original_graph.nodes:  # a view of an input shares its memory: t[0], t.view(-1), w.t()
        if n.args and n.args[0] in inputs and _is_view(n):
            inputs.add(n)
    readers = {u for r in match.returning_nodes for u in r.users}
    # autograd records the fused op (its output requires grad): it saves x, weight and bias, so a write after the
    # first reader breaks its backward too; look to the graph's end
    recorded = any(getattr(r.meta.get("example_value"), "requires_grad", True) for r in match.returning_nodes)
    started = False
    for n in original_graph.nodes:
        if n in readers and not recorded:
            break
        started = started or n in inner
        if started and n.kwargs.get("out") in inputs:
            return False
        if not started or not n.args or n.args[0] not in inputs:
            continue
        name = n.target if n.op == "call_method" else getattr(n.target, "__name__", "")
        if (n.op == "call_method" and name.endswith("_") and not name.endswith("__")) or (
                n.op == "call_function" and (name in ("iadd", "isub", "imul", "itruediv", "setitem")
                                             or name.endswith("_") or n.kwargs.get("inplace") is True)):
            return False
    return True


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
