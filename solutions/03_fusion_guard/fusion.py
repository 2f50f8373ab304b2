"""Reference solution for kata 3: fuse Linear -> GELU into one `kata::linear_gelu` node, only where it is safe.

The pass works in four steps, the shape of every graph optimization:

1. match    -- find a GELU whose input is a Linear, in whatever dialect the graph is written in;
2. guard    -- keep the match only if the Linear's output is read by the GELU and nothing else;
3. rewrite  -- put one fused node where the GELU was and point the GELU's users at it;
4. clean up -- erase the nodes the rewrite left without users, lint, recompile.

A Linear shows up in one of four forms (see katas/common/capture.py for which tool produces which):

    MODULE      call_module to an nn.Linear (or a subclass     weights: get_attr nodes made by the pass
                that keeps nn.Linear.forward)
    TORCH       torch._C._nn.linear(x, w, b)   (that is F.linear)
    ATEN        aten.linear.default(x, w, b)   (torch.export, make_fx(pre_dispatch=True))
    decomposed  aten.addmm.default(b, x, t(w))  or  aten.mm.default(x, t(w)),  t = aten.t or aten.permute [1, 0]
                (or [-1, -2])
                (make_fx and aot_autograd: ATEN dialect; export().run_decompositions(): CORE_ATEN)

and a GELU as a call_module to nn.GELU, torch._C._nn.gelu (F.gelu) or aten.gelu.default.

Decomposed graphs of inputs with more than two dimensions (and of 1-D inputs) flatten the input to a matrix
and reshape the product back: `gelu(view(addmm(b, view(x, [N, in]), t(w)), [..., out]))`. GELU works
element by element, so applying it before or after the reshape gives the same tensor. This pass keeps the
reshape: the fused node takes the flattened matrix and the reshape now reads the fused node,

    view(linear_gelu(view(x, [N, in]), w, b), [..., out])

(A pass that feeds the original N-D `x` to the fused op and drops both views is equally correct.)
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Optional, Union

import torch
import torch.fx
import torch.nn as nn
from torch.fx.node import Argument, Node

from katas.common.ops import LINEAR_GELU  # importing registers torch.ops.kata.linear_gelu

aten = torch.ops.aten

# F.linear and F.gelu are these builtins; symbolic_trace and Dynamo record them under these names.
TORCH_LINEAR = torch._C._nn.linear
TORCH_GELU = torch._C._nn.gelu
LINEAR_FUNCTIONS = {TORCH_LINEAR, aten.linear.default}
GELU_FUNCTIONS = {TORCH_GELU, aten.gelu.default}
# How decompositions flatten the input to a matrix and reshape the product back.
RESHAPES = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}
# The spellings of the written-out GELU's steps (`0.5 * x * (1 + tanh(...))`): Python's operators, torch's
# functions, Tensor methods (call_method nodes, by name) and the ATen ops the captures record.
MULTIPLIES = {operator.mul, torch.mul, aten.mul.Tensor, "mul"}
ADDS = {operator.add, torch.add, aten.add.Tensor, "add"}
TANHS = {torch.tanh, aten.tanh.default, "tanh"}


@dataclass(frozen=True)
class Param:
    """A parameter of a Linear module, by qualified name (`"fc0.weight"`). MODULE graphs never read a
    Linear's parameters as graph values (the call_module node reads them itself), so the pass makes a
    get_attr node for each one the fused node needs."""

    target: str


Operand = Union[Node, Param]


@dataclass(frozen=True)
class LinearOperands:
    """What a Linear computes, `x @ weight.T + bias`, as graph values."""

    x: Argument
    weight: Operand
    bias: Optional[Operand]


@dataclass(frozen=True)
class Match:
    """One Linear -> GELU pair that is safe to fuse."""

    linear: Node
    reshape: Optional[Node]  # the view between the product and the GELU of a decomposed graph
    gelu: Node
    approximate: str


def fuse_linear_gelu(gm: torch.fx.GraphModule) -> int:
    """Fuse every safe Linear -> GELU pair of `gm` into one `torch.ops.kata.linear_gelu.default` node.

    Rewrites `gm` in place and returns the number of pairs fused. A pair is fused only when the Linear's
    output (and, in decomposed graphs, the reshape of it) is read by the GELU alone. GELU's `approximate`
    is carried over; a Linear without bias gets `bias=None`. Nodes outside the fused pairs are left as
    they are; nodes the rewrite leaves without users are erased. Nodes the capture already left without users
    are kept (the contract allows deleting them too, as graph.eliminate_dead_code() would). The graph lints and `gm` is recompiled,
    so calling `gm` runs the fused graph. Running the pass again fuses nothing and returns 0.
    """
    matches = [match for node in gm.graph.nodes if (match := match_at(gm, node)) is not None]
    for match in matches:
        rewrite(gm, match)
    gm.graph.lint()
    gm.recompile()  # gm.forward is generated from the graph; without this the old code keeps running
    return len(matches)


# --- 1. match --------------------------------------------------------------------------------------------

def match_at(gm: torch.fx.GraphModule, node: Node) -> Optional[Match]:
    """The safe Linear -> GELU pair ending at `node`, or None if `node` is not the GELU of one."""
    approximate = gelu_approximate(gm, node)
    if approximate is None or not node.args or not isinstance(node.args[0], Node):
        return None
    source, reshape = node.args[0], None
    if is_reshape(source) and isinstance(source.args[0], Node):
        reshape, source = source, source.args[0]
    if linear_operands(gm, source) is None:
        return None
    if not feeds_only(source, reshape or node) or (reshape is not None and not feeds_only(reshape, node)):
        return None
    return Match(source, reshape, node, approximate)


def gelu_approximate(gm: torch.fx.GraphModule, node: Node) -> Optional[str]:
    """GELU's `approximate` ("none" or "tanh") if `node` computes a GELU, else None."""
    if node.op == "call_module":
        module = gm.get_submodule(node.target)
        # a subclass that overrides forward computes something else: only the real nn.GELU qualifies
        return module.approximate if type(module).forward is nn.GELU.forward else None
    if node.op == "call_function" and node.target in GELU_FUNCTIONS:
        return node.kwargs.get("approximate", "none")  # keyword-only in both F.gelu and aten.gelu
    return None


def linear_operands(gm: torch.fx.GraphModule, node: Node) -> Optional[LinearOperands]:
    """(x, weight, bias) if `node` computes `x @ weight.T + bias` in any dialect, else None.

    Reads the node's arguments as they are now, so call it again after an earlier rewrite replaced x.
    """
    if node.op == "call_module":
        module = gm.get_submodule(node.target)
        if type(module).forward is not nn.Linear.forward:  # e.g. a LoRA subclass: not a plain Linear
            return None
        bias = Param(f"{node.target}.bias") if module.bias is not None else None
        return LinearOperands(argument(node, 0, "input"), Param(f"{node.target}.weight"), bias)
    if node.op != "call_function":
        return None
    if node.target in LINEAR_FUNCTIONS:
        # the bias may be positional, a keyword, an explicit None (Dynamo) or absent (F.linear(x, w))
        return LinearOperands(argument(node, 0, "input"), argument(node, 1, "weight"),
                              argument(node, 2, "bias", default=None))
    if node.target == aten.addmm.default:
        if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
            return None  # beta * b + alpha * (x @ m) is a Linear only when both are 1
        bias, x, weight_t = node.args
        weight = transposed(weight_t)
        return LinearOperands(x, weight, bias) if weight is not None else None
    if node.target == aten.mm.default:
        x, weight_t = node.args
        weight = transposed(weight_t)
        return LinearOperands(x, weight, None) if weight is not None else None
    return None


def transposed(node: Argument) -> Optional[Node]:
    """`w` if `node` transposes the matrix `w`: `aten.t(w)` or `aten.permute(w, [1, 0])` (or `[-1, -2]`, the same
    dims counted from the end); else None (then the matrix is not a Linear's weight as the fused op expects it).
    make_fx's `aten.transpose.int(w, 0, 1)` (a hand-written `w.transpose(0, 1)`) is left: the lesson lets a pass
    fuse it or not, and no Linear decomposes to it."""
    if not isinstance(node, Node) or node.op != "call_function":
        return None
    if node.target == aten.t.default:
        return node.args[0]
    if node.target == aten.permute.default and [d % 2 for d in node.args[1]] == [1, 0]:
        return node.args[0]  # a weight is 2-D, so dim d and dim d - 2 are the same dim
    return None


def is_reshape(node: Node) -> bool:
    return node.op == "call_function" and node.target in RESHAPES


def argument(node: Node, index: int, name: str, default: Argument = None) -> Argument:
    """The argument at position `index` or keyword `name` of a call node."""
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


# --- 2. guard --------------------------------------------------------------------------------------------

def feeds_only(node: Node, user: Node) -> bool:
    """True if `user` is the only node reading `node`.

    This is the whole safety argument of the fusion. The fused node produces GELU(linear) and nothing
    else, so the pre-GELU value disappears from the graph. If anything else reads it -- a residual add,
    the graph's output, a second activation -- fusing would either hand that reader the wrong value or
    force the Linear to be computed twice. Such pairs are left alone.
    """
    return list(node.users) == [user]


# --- 3. rewrite and 4. clean up ---------------------------------------------------------------------------

def rewrite(gm: torch.fx.GraphModule, match: Match) -> Node:
    """Replace `match` with one fused node; erase the nodes that are left without users. Returns the node."""
    graph = gm.graph
    operands = linear_operands(gm, match.linear)
    anchor = match.reshape or match.gelu  # the fused node goes where the first node after the product was
    with graph.inserting_before(anchor):
        weight, bias = as_value(graph, operands.weight), as_value(graph, operands.bias)
        fused = graph.call_function(LINEAR_GELU, (operands.x, weight, bias), {"approximate": match.approximate})
    # the fused output has the product's shape and dtype; later passes read them from meta
    fused.meta.update({k: v for k, v in match.linear.meta.items() if k in ("val", "tensor_meta", "example_value")})
    if match.reshape is not None:
        match.reshape.replace_input_with(match.linear, fused)  # view(linear_gelu(...)) == gelu(view(linear))
        match.gelu.replace_all_uses_with(match.reshape)
    else:
        match.gelu.replace_all_uses_with(fused)
    graph.erase_node(match.gelu)
    inputs = match.linear.all_input_nodes
    graph.erase_node(match.linear)
    for node in inputs:
        erase_if_dead(graph, node)
    return fused


def as_value(graph: torch.fx.Graph, operand: Optional[Operand]) -> Optional[Node]:
    """A graph value for `operand`: a module parameter becomes a get_attr node (the module itself stays,
    because another call_module node may still call it)."""
    if isinstance(operand, Param):
        return graph.get_attr(operand.target)
    return operand


def erase_if_dead(graph: torch.fx.Graph, node: Node) -> None:
    """Erase `node` if the rewrite left it without users (e.g. the weight's transpose), then its inputs.

    Only pure call_function and get_attr nodes go; placeholders are the graph's signature and stay."""
    if node.users or node.op not in ("call_function", "get_attr") or node.is_impure():
        return
    inputs = node.all_input_nodes
    graph.erase_node(node)
    for input_node in inputs:
        erase_if_dead(graph, input_node)


# --- the report: what the pass left, and why -----------------------------------------------------------------

def unfused_pairs(gm: torch.fx.GraphModule) -> list[tuple[str, str]]:
    """Every GELU still in `gm`, in graph order, as (node name, reason): "safe" (a pair the pass should have
    fused), "other_readers" (the guard keeps it), "not_a_linear" (the GELU reads something else) or
    "written_out" (the tanh formula spelled out, reported at its last multiply). Reads the graph only.

    A pass that returns 0 on GPT-2 has missed nothing: its MLPs are Conv1D -> gelu_new, "written_out" here. The
    report tells that 0 from a pass that missed every pair ("safe")."""
    report = []
    for node in gm.graph.nodes:
        if is_written_out_gelu(node):
            report.append((node.name, "written_out"))
        elif gelu_approximate(gm, node) is not None:
            report.append((node.name, why_not_fused(gm, node)))
    return report


def why_not_fused(gm: torch.fx.GraphModule, gelu: Node) -> str:
    """The reason a GELU node is still in the graph: the match's first step failed, or its guard did."""
    source = gelu.args[0] if gelu.args else None
    if isinstance(source, Node) and is_reshape(source) and isinstance(source.args[0], Node):
        source = source.args[0]
    if not isinstance(source, Node) or linear_operands(gm, source) is None:
        return "not_a_linear"
    return "safe" if match_at(gm, gelu) is not None else "other_readers"


def calls(node: Argument, spellings: set) -> bool:
    """`node` calls one of `spellings`: a function or op, or a Tensor method by name."""
    if not isinstance(node, Node):
        return False
    if node.op == "call_method":
        return node.target in spellings
    return node.op == "call_function" and node.target in spellings


def is_written_out_gelu(node: Node) -> bool:
    """The last multiply of `0.5 * x * (1 + tanh(...))`: a multiply of a multiply by 0.5 and an add of 1 to a
    tanh, each in either order. (Its arguments are positional in every capture.)"""
    if not calls(node, MULTIPLIES) or len(node.args) != 2:
        return False
    first, second = node.args
    return (is_half(first) and is_one_plus_tanh(second)) or (is_half(second) and is_one_plus_tanh(first))


def is_half(node: Argument) -> bool:
    """A multiply by the number 0.5, in either order."""
    return calls(node, MULTIPLIES) and len(node.args) == 2 and any(
        not isinstance(a, Node) and a == 0.5 for a in node.args)


def is_one_plus_tanh(node: Argument) -> bool:
    if not calls(node, ADDS) or len(node.args) != 2:
        return False
    first, second = node.args
    return (first == 1 and calls(second, TANHS)) or (second == 1 and calls(first, TANHS))
