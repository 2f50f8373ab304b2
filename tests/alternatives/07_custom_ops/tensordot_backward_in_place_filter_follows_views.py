"""A different correct attempt at kata 7 (blind round 2, correct_a): the backward sums over the leading dimensions
with tensordot (no flattening), the fake kernels build their shapes by torch.Size concatenation
(`x.shape[:-1] + weight.shape[:1]`), and the in-place filter follows views of the pair's inputs (aliases), not only
the inputs themselves. The rewrite uses ignore_literals=True with a replacement_callback reading the GELU's
`approximate` (two patterns), and the grad-mode filter compares the modes at the Linear, the GELU and the insertion
point. Every kernel computes in x's dtype: in float16 and bfloat16 it is bit-identical to eager.
"""
from __future__ import annotations

import operator
from typing import Optional

import torch
import torch.fx
import torch.nn.functional as F
from torch.fx.subgraph_rewriter import replace_pattern_with_filters


# --- Step 1: the op -------------------------------------------------------------------------------------------
@torch.library.custom_op("npu::linear_gelu", mutates_args=())
def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                approximate: str = "none") -> torch.Tensor:
    return F.gelu(F.linear(x, weight, bias), approximate=approximate)


@linear_gelu.register_fake
def _linear_gelu_fake(x, weight, bias, approximate="none"):
    return x.new_empty(x.shape[:-1] + weight.shape[:1])


# --- Step 3: the backward kernel ---------------------------------------------------------------------------------
@torch.library.custom_op("npu::linear_gelu_backward", mutates_args=())
def linear_gelu_backward(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                         approximate: str = "none") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    z = F.linear(x, weight, bias)
    g = torch.ops.aten.gelu_backward(grad, z, approximate=approximate)   # dL/dz, shape (*lead, out)
    lead = list(range(x.dim() - 1))
    grad_x = g @ weight                                                   # (*lead, in)
    grad_weight = torch.tensordot(g, x, dims=(lead, lead))                # (out, in); 1-D: outer product
    grad_bias = g.sum(dim=lead) if lead else g.clone()                    # sum(dim=[]) would sum everything
    return grad_x, grad_weight, grad_bias


@linear_gelu_backward.register_fake
def _linear_gelu_backward_fake(grad, x, weight, bias, approximate="none"):
    return x.new_empty(x.shape), weight.new_empty(weight.shape), weight.new_empty(weight.shape[:1])


def _setup_context(ctx, inputs, output):
    x, weight, bias, approximate = inputs
    ctx.save_for_backward(x, weight, bias)
    ctx.approximate = approximate
    ctx.had_bias = bias is not None


def _backward(ctx, grad):
    x, weight, bias = ctx.saved_tensors
    grad_x, grad_weight, grad_bias = linear_gelu_backward(grad, x, weight, bias, ctx.approximate)
    return grad_x, grad_weight, (grad_bias if ctx.had_bias else None), None


linear_gelu.register_autograd(_backward, setup_context=_setup_context)


# --- Step 4: an out= variant ---------------------------------------------------------------------------------
@torch.library.custom_op("npu::linear_gelu_out", mutates_args=("out",))
def linear_gelu_out(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], out: torch.Tensor,
                    approximate: str = "none") -> None:
    out.copy_(F.gelu(F.linear(x, weight, bias), approximate=approximate))


# --- Step 5: the rewrite ------------------------------------------------------------------------------------
LINEAR = torch._C._nn.linear
GELU = torch._C._nn.gelu
SET_GRAD = torch._C._set_grad_enabled


def _pattern_plain(x, w, b):
    return torch._C._nn.gelu(torch._C._nn.linear(x, w, b))


def _pattern_keyword(x, w, b):
    return torch._C._nn.gelu(torch._C._nn.linear(x, w, b), approximate="none")


def _replacement_for(match, original_graph, pattern_graph) -> torch.fx.Graph:
    gelu_node = next(n for n in match.nodes_map.values()
                     if isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target is GELU)
    approximate = gelu_node.kwargs.get("approximate", "none")
    g = torch.fx.Graph()
    x, w, b = g.placeholder("x"), g.placeholder("w"), g.placeholder("b")
    g.output(g.call_function(torch.ops.npu.linear_gelu.default, (x, w, b, approximate)))
    return g


def _matched_nodes(match, graph: torch.fx.Graph) -> list:
    """The graph nodes the pattern covers (the Linear and the GELU), in graph order."""
    inputs = set(n for n in match.placeholder_nodes if isinstance(n, torch.fx.Node))
    covered = {n for n in match.nodes_map.values()
               if isinstance(n, torch.fx.Node) and n not in inputs and n.op not in ("placeholder", "output")}
    return [n for n in graph.nodes if n in covered]


def _insertion_point(match, graph: torch.fx.Graph):
    readers = {u for n in match.returning_nodes for u in n.users}
    nodes = list(graph.nodes)
    if readers:
        return next(n for n in nodes if n in readers)
    last = max(nodes.index(n) for n in match.returning_nodes)
    return nodes[last + 1]


def _grad_modes(graph: torch.fx.Graph) -> dict:
    """The grad mode each node runs in: True/False, or "ambient" (the caller's) before any switch.

    Dynamo writes a _set_grad_enabled call only where the mode changes, so when the calls strictly alternate the
    ambient mode is the opposite of the first call's; otherwise it stays unknown (equal only to itself)."""
    values = [n.args[0] for n in graph.nodes
              if n.op == "call_function" and n.target is SET_GRAD and n.args and isinstance(n.args[0], bool)]
    ambient = "ambient"
    if values and all(a != b for a, b in zip(values, values[1:])):
        ambient = not values[0]
    modes, mode = {}, ambient
    for n in graph.nodes:
        modes[n] = mode
        if n.op == "call_function" and n.target is SET_GRAD:
            arg = n.args[0] if n.args else None
            mode = arg if isinstance(arg, bool) else object()   # unknown value: equal to nothing
    return modes


def no_grad_mode_switch(match, original_graph, pattern_graph) -> bool:
    modes = _grad_modes(original_graph)
    points = _matched_nodes(match, original_graph) + [_insertion_point(match, original_graph)]
    first = modes[points[0]]
    return all(modes[p] == first for p in points)


_VIEW_METHODS = {"view", "view_as", "reshape", "reshape_as", "transpose", "t", "permute", "unsqueeze", "squeeze",
                 "flatten", "unflatten", "expand", "expand_as", "narrow", "select", "as_strided", "split", "chunk",
                 "unbind", "movedim", "swapaxes", "swapdims", "diagonal", "detach", "view_as_real", "mT", "T",
                 "contiguous", "unfold", "tensor_split", "split_with_sizes", "real", "imag", "alias",
                 "transpose_", "squeeze_", "unsqueeze_", "t_", "as_strided_", "detach_", "requires_grad_", "data"}
_INPLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                      operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor, operator.ilshift,
                      operator.irshift, operator.imatmul, operator.setitem, operator.iconcat}


def _name(target) -> str:
    return target if isinstance(target, str) else getattr(target, "__name__", "")


def _alias_source(node: torch.fx.Node):
    """The node whose memory `node` may share (a view of it), or None."""
    if node.op == "call_method" and node.target in _VIEW_METHODS and node.args:
        return node.args[0]
    if node.op == "call_function":
        if node.target in (operator.getitem, getattr) and node.args:
            return node.args[0]
        if _name(node.target) in _VIEW_METHODS and node.args:
            return node.args[0]
    written = _writes_into(node) if node.op in ("call_function", "call_method") else []
    return written[0] if written else None   # an in-place op returns the tensor it wrote into


def _writes_into(node: torch.fx.Node):
    """The nodes `node` writes in place into."""
    written = []
    first = node.args[0] if node.args else node.kwargs.get("input", node.kwargs.get("self"))
    if node.op == "call_method" and node.target.endswith("_") and not node.target.endswith("__"):
        written.append(first)
    elif node.op == "call_function":
        if node.target in _INPLACE_OPERATORS or (_name(node.target).endswith("_")
                                                 and not _name(node.target).endswith("__")):
            written.append(first)
    if node.op in ("call_function", "call_method", "call_module"):
        if node.kwargs.get("inplace") is True:
            written.append(first)
        out = node.kwargs.get("out")
        if out is not None:
            written.extend(out if isinstance(out, (list, tuple)) else [out])
    return [w for w in written if isinstance(w, torch.fx.Node)]


def no_in_place_write(match, original_graph, pattern_graph) -> bool:
    nodes = list(original_graph.nodes)
    # alias classes: every node joined to what it is a view of
    parent = {}

    def root(n):
        while parent.get(n, n) is not n:
            n = parent[n]
        return n

    for n in nodes:
        src = _alias_source(n)
        if isinstance(src, torch.fx.Node):
            parent[root(n)] = root(src)
    inputs = {root(n) for n in match.placeholder_nodes if isinstance(n, torch.fx.Node)}
    start = nodes.index(_matched_nodes(match, original_graph)[0])
    stop = nodes.index(_insertion_point(match, original_graph))
    if any(getattr(n.meta.get("example_value"), "requires_grad", True) for n in match.returning_nodes):
        stop = len(nodes)  # autograd records the fused op, which saves x, w and b: a later write breaks its backward
    for n in nodes[start:stop]:
        if any(root(w) in inputs for w in _writes_into(n)):
            return False
    return True


_FILTERS = [no_grad_mode_switch, no_in_place_write]


def fuse_with_rewriter(gm: torch.fx.GraphModule) -> int:
    fused = 0
    for pattern in (_pattern_keyword, _pattern_plain):
        fused += len(replace_pattern_with_filters(gm, pattern, None, _FILTERS, ignore_literals=True,
                                                  replacement_callback=_replacement_for))
    return fused


# --- Step 6: training ---------------------------------------------------------------------------------------
def npu_training_backend(gm: torch.fx.GraphModule, example_inputs: list):
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    fuse_with_rewriter(gm)

    def compiler(g, _):
        return make_boxed_func(g.forward)

    return aot_autograd(fw_compiler=compiler, bw_compiler=compiler)(gm, example_inputs)
