"""Reference solution for kata 7: the vendor kernel's op, its fake kernel and autograd, an out= variant, a
pattern rewrite that inserts it, and a torch.compile backend that fuses before autograd so training runs it.

Four pieces, each a thing a backend author really writes:

1. the ops -- `npu::linear_gelu` (forward), `npu::linear_gelu_backward` (the vendor's backward kernel) and
   `npu::linear_gelu_out` (writes into a buffer the caller allocated), each with a fake kernel that computes
   only shapes and dtypes, proven with `torch.library.opcheck`;
2. autograd -- `register_autograd` saves what the fused op has (x, weight, bias: never the pre-GELU value,
   which the fused op never stores) and calls the backward op;
3. the rewrite -- `replace_pattern_with_filters` with one pattern per form a Dynamo graph writes the pair in;
   the matcher already refuses a pair whose Linear output has another reader, and the filters refuse a pair
   that a grad-mode switch or an in-place write into its inputs separates from the place the rewriter puts its
   replacement;
4. the backend -- the rewrite runs on Dynamo's graph, before aot_autograd splits it into forward and backward:
   after the split, the forward graph returns the pre-GELU value for backward and no pair is safe any more.
"""
from __future__ import annotations

import operator
from typing import Optional

import torch
import torch.fx
import torch.nn.functional as F
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd
from torch.fx.passes.utils.matcher_utils import InternalMatch
from torch.fx.subgraph_rewriter import replace_pattern_with_filters


# --- 1. the ops -------------------------------------------------------------------------------------------

@torch.library.custom_op("npu::linear_gelu", mutates_args=())
def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                approximate: str = "none") -> torch.Tensor:
    """gelu(x @ weight.T + bias), one kernel on the NPU. Here: the same arithmetic as eager, on the CPU."""
    return F.gelu(F.linear(x, weight, bias), approximate=approximate)


@linear_gelu.register_fake
def _linear_gelu_fake(x, weight, bias, approximate="none"):
    # shapes and dtype only, from the inputs' (possibly symbolic) sizes: never int() a size here
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


@torch.library.custom_op("npu::linear_gelu_backward", mutates_args=())
def linear_gelu_backward(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                         approximate: str = "none") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(grad_x, grad_weight, grad_bias) of linear_gelu. The pre-GELU value is recomputed from the inputs: the
    forward kernel never wrote it to memory, so there is nothing else to read it from."""
    pre_gelu = F.linear(x, weight, bias)
    grad_pre = torch.ops.aten.gelu_backward(grad, pre_gelu, approximate=approximate)
    rows_grad, rows_x = grad_pre.reshape(-1, grad_pre.shape[-1]), x.reshape(-1, x.shape[-1])
    return grad_pre @ weight, rows_grad.t() @ rows_x, rows_grad.sum(0)


@linear_gelu_backward.register_fake
def _linear_gelu_backward_fake(grad, x, weight, bias, approximate="none"):
    return torch.empty_like(x), torch.empty_like(weight), weight.new_empty((weight.shape[0],))


def _setup_context(ctx, inputs, output):
    x, weight, bias, approximate = inputs
    ctx.save_for_backward(x, weight, bias)
    ctx.approximate = approximate
    ctx.has_bias = bias is not None


def _backward(ctx, grad):
    x, weight, bias = ctx.saved_tensors
    grad_x, grad_weight, grad_bias = linear_gelu_backward(grad, x, weight, bias, ctx.approximate)
    # one gradient per input of the forward op; None for the bias that was not there and for the string
    return grad_x, grad_weight, grad_bias if ctx.has_bias else None, None


linear_gelu.register_autograd(_backward, setup_context=_setup_context)


@torch.library.custom_op("npu::linear_gelu_out", mutates_args=("out",))
def linear_gelu_out(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], out: torch.Tensor,
                    approximate: str = "none") -> None:
    """linear_gelu written into `out`, a buffer the caller allocated (a shape-static NPU plans its memory ahead).
    `out` is declared mutated: without that, the compiler may drop or reorder the call."""
    out.copy_(F.gelu(F.linear(x, weight, bias), approximate=approximate))


# --- 3. the rewrite ---------------------------------------------------------------------------------------

# Dynamo writes nn.GELU() as gelu(z, approximate='none') and F.gelu(z) as gelu(z) with no keyword; the matcher
# compares keywords as they are written, so each form needs its own pattern. A pattern placeholder also
# matches the explicit None a bias-free Linear passes, so one `b` covers both kinds of Linear.
def _pattern_plain(x, w, b):
    return torch._C._nn.gelu(torch._C._nn.linear(x, w, b))


def _pattern_none(x, w, b):
    return torch._C._nn.gelu(torch._C._nn.linear(x, w, b), approximate="none")


def _pattern_tanh(x, w, b):
    return torch._C._nn.gelu(torch._C._nn.linear(x, w, b), approximate="tanh")


def _fused_none(x, w, b):
    return linear_gelu(x, w, b, "none")


def _fused_tanh(x, w, b):
    return linear_gelu(x, w, b, "tanh")


REWRITES = ((_pattern_plain, _fused_none), (_pattern_none, _fused_none), (_pattern_tanh, _fused_tanh))
GRAD_MODE_SWITCHES = {torch._C._set_grad_enabled}
# how Dynamo's graph writes into a tensor in place: `t += 1`, `t[0] = 0` (besides methods like t.mul_, and calls
# with inplace=True or out=)
IN_PLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                      operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior, operator.ixor,
                      operator.ilshift, operator.irshift, operator.setitem}


def _between_match_and_insertion(match: InternalMatch, graph: torch.fx.Graph, to_the_end: bool = False):
    """The nodes after the match's first node and before the place the rewriter puts the replacement (the first
    reader of the GELU), or to the graph's end if `to_the_end`, the match's own nodes left out."""
    matched = {node for node in match.nodes_map.values() if node not in match.placeholder_nodes}
    readers = {user for node in match.returning_nodes for user in node.users}
    inside = False
    for node in graph.nodes:
        if node in readers and not to_the_end:  # where the replacement goes
            return
        if node in matched:
            inside = True
        elif inside:
            yield node


def no_grad_mode_switch(match: InternalMatch, graph: torch.fx.Graph, pattern: torch.fx.Graph) -> bool:
    """True if no grad-mode switch lies between the match's first node and where its replacement goes.

    The rewriter puts the replacement just before the first reader of the GELU, which is not where the GELU
    was. Inside `with torch.no_grad():` that reader may come after Dynamo's `_set_grad_enabled(True)`: the
    fused op would then record autograd history the eager model never had, and training would send
    gradients into a frozen Linear. (The single-user guard is not needed here: the matcher already refuses a
    match whose inner nodes are read from outside it.) A pair that jumps over a closed block is refused too:
    the lesson allows that.
    """
    return not any(node.target in GRAD_MODE_SWITCHES for node in _between_match_and_insertion(match, graph))


def _writes_in_place(node: torch.fx.Node, inputs: set) -> bool:
    """Does `node` write in place into one of `inputs`?"""
    if node.op not in ("call_method", "call_function"):
        return False
    written = node.kwargs.get("out")
    if written in inputs:
        return True
    if not node.args or node.args[0] not in inputs:
        return False
    if node.op == "call_method":
        return node.target.endswith("_") and not node.target.endswith("__")
    name = getattr(node.target, "__name__", "")
    return (node.target in IN_PLACE_OPERATORS or node.kwargs.get("inplace") is True
            or (name.endswith("_") and not name.endswith("__")))


# methods (and torch functions) whose result shares its first argument's memory: a write into it writes there too
VIEW_METHODS = {"view", "view_as", "reshape", "reshape_as", "t", "transpose", "permute", "unsqueeze", "squeeze",
                "flatten", "unflatten", "expand", "expand_as", "narrow", "select", "diagonal", "movedim", "swapaxes",
                "unfold", "detach", "as_strided", "split", "chunk", "unbind"}


# attributes that are views: Dynamo records `w.T` as getattr(w, "T")
VIEW_ATTRIBUTES = {"T", "mT", "H", "mH", "real", "imag"}


def _aliases_its_first_argument(node: torch.fx.Node) -> bool:
    """Does `node`'s result share the memory of its first argument: a view (`t[0]`, `t.permute(...)`, `w.T`), or an
    in-place write, which returns the tensor it wrote (`u = t.mul_(1.0)` is t)?"""
    if node.op not in ("call_method", "call_function") or not node.args or not isinstance(node.args[0], torch.fx.Node):
        return False
    if node.target is operator.getitem:
        return True
    if node.target is getattr:
        return len(node.args) > 1 and node.args[1] in VIEW_ATTRIBUTES
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    return name in VIEW_METHODS or _writes_in_place(node, {node.args[0]})


def _views_of(inputs: set, graph: torch.fx.Graph) -> set:
    """Every node that shares memory with one of `inputs`: the input, its views (`t[0]`, `t.view(-1)`, `w.t()`, a
    view of a view), the tensor it is a view of (its base, the base's base), that base's other views, and what an
    in-place write into any of them returned. Each such node is traced back, in graph order, to the tensor at the
    root of its chain; nodes with one root share memory."""
    root = {}
    for node in graph.nodes:
        root[node] = node
        if _aliases_its_first_argument(node):
            root[node] = root.get(node.args[0], node.args[0])
        elif node.kwargs.get("out") is not None and isinstance(node.kwargs["out"], torch.fx.Node):
            root[node] = root.get(node.kwargs["out"], node.kwargs["out"])  # torch.mul(a, b, out=t) returns t
    shared = {root.get(node, node) for node in inputs}
    return set(inputs) | {node for node, base in root.items() if base in shared}


def _recorded_by_autograd(match: InternalMatch) -> bool:
    """Will autograd record the fused op? Dynamo notes each node's example value: the GELU's output requires grad
    when grad mode is on at the pair and x, weight or bias requires grad (a graph without the notes: assume so)."""
    return any(getattr(node.meta.get("example_value"), "requires_grad", True) for node in match.returning_nodes)


def no_in_place_write(match: InternalMatch, graph: torch.fx.Graph, pattern: torch.fx.Graph) -> bool:
    """True if no node between the match's first node and where its replacement goes writes in place into one of
    the match's inputs (x, weight or bias), directly, through a view of it or through the tensor it is a view of
    (or another view of that tensor): the fused op, put after that write,
    would read the written value.

    When autograd records the fused op, the window runs to the graph's end: the op saves x, weight and bias for
    its backward, and a later write into one of them makes that backward fail ("modified by an inplace
    operation"), where eager's Linear + GELU saved less (never the bias; x only when the weight requires grad,
    the weight only when x does)."""
    inputs = _views_of({node for node in match.placeholder_nodes if isinstance(node, torch.fx.Node)}, graph)
    window = _between_match_and_insertion(match, graph, to_the_end=_recorded_by_autograd(match))
    return not any(_writes_in_place(node, inputs) for node in window)


FILTERS = [no_grad_mode_switch, no_in_place_write]


def fuse_with_rewriter(gm: torch.fx.GraphModule) -> int:
    """Replace every Linear -> GELU pair of a Dynamo graph that is safe to fuse with one `linear_gelu` call.

    Returns the number of pairs fused; `gm` is rewritten in place and recompiled."""
    fused = 0
    for pattern, replacement in REWRITES:
        fused += len(replace_pattern_with_filters(gm, pattern, replacement, match_filters=FILTERS))
    gm.graph.lint()
    gm.recompile()
    return fused


# --- 4. the backend ---------------------------------------------------------------------------------------

def _run_graph(gm: torch.fx.GraphModule, example_inputs):
    return make_boxed_func(gm.forward)


_AUTOGRAD = aot_autograd(fw_compiler=_run_graph, bw_compiler=_run_graph)


def npu_training_backend(gm: torch.fx.GraphModule, example_inputs):
    """A torch.compile backend: fuse on Dynamo's graph, then let aot_autograd split forward and backward.

    The forward graph then calls linear_gelu, and the backward graph calls linear_gelu_backward, for every
    pair the rewrite fused."""
    fuse_with_rewriter(gm)
    return _AUTOGRAD(gm, example_inputs)
