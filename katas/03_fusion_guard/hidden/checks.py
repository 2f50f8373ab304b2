"""Hidden checks for kata 3 (Linear+GELU fusion with the single-user guard). Learners: solve the kata from
README.md, not from here.

Every check captures a real model with `katas.common.capture`, runs the attempt's pass on the captured graph
in place, and then proves two things independently of how the attempt is written:

* structure -- counted from the model's description, never from the reference: the number of fused nodes
  equals the number of SAFE Linear -> GELU pairs, the number of linear computations (unfused + fused) is
  what the model has, each fused node carries its GELU's `approximate`, everything else is still there,
  nothing is left dead, the graph lints;
* behaviour -- the rewritten graph, run through the capture's own calling convention, calls the fused
  kernel once per fused node (`katas.common.ops.LINEAR_GELU_CALLS`) and matches eager within assert_close.
"""
from __future__ import annotations

import dataclasses
import operator
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import strategies as st

from katas.common.naming import module_type_name, target_name
from checker.kit import Checks, CheckFailed, _attempt_location, expect, fuzz
from katas.common import capture, describe
from katas.common.models import LayerSpec, MLPSpec, build_mlp
from checker.channel.graphs import VALUE_KEYS, VALUE_KEYS_META
from katas.common.capture import CaptureError
from katas.common.ops import LINEAR_GELU_CALLS
from katas.common.strategies import mlp_specs
from checker.kit import load_module

programs = load_module(Path(__file__).with_name("programs.py"), "kata03_fusion_guard_programs")  # pair programs
LEAF_TRACER = programs.LEAF_TRACER

CHECKS = Checks()
aten = torch.ops.aten
FUSED = torch.ops.kata.linear_gelu.default
LINEAR_FUNCTIONS = {torch._C._nn.linear, aten.linear.default, aten.addmm.default, aten.mm.default}
GELU_FUNCTIONS = {torch._C._nn.gelu, aten.gelu.default}
# nodes a correct rewrite may add or drop: parameter reads, the weight's transpose, the reshapes of decomposed graphs
PLUMBING_FUNCTIONS = {aten.t.default, aten.permute.default, aten.transpose.int, aten.view.default,
                      aten._unsafe_view.default, aten.reshape.default}
RESHAPES = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}
# size arithmetic of graphs with a symbolic batch: a pass that drops the views may drop what only they read
SIZE_FUNCTIONS = {aten.sym_size.int, operator.mul, operator.floordiv, operator.add, operator.sub, operator.pow,
                  operator.mod, operator.neg}  # aot_autograd writes s0 ** 2 for a batch of two equal (duck-sized) dims

EVERY_CAPTURE = ("symbolic_trace", "dynamo", "make_fx_pre_dispatch", "export", "make_fx", "aot_autograd", "export_core")
# the cheapest capture of each graph form (export_core costs ~0.4 s; make_fx and aot_autograd give the same form)
ONE_PER_FORM = ("symbolic_trace", "dynamo", "export", "make_fx")

FORM_NOTES = {
    "module": "MODULE graph: the Linear is a call_module node (node.target is the submodule's name, "
              "gm.get_submodule(node.target) the nn.Linear); the GELU is a call_module to nn.GELU or a call_function "
              "to F.gelu. A matcher that only knows aten ops finds nothing here, and says nothing.",
    "torch": "TORCH graph: the Linear is call_function torch._C._nn.linear (that is F.linear), the GELU "
             "torch._C._nn.gelu (F.gelu); the bias is positional, a bias= keyword, None, or missing.",
    "aten": "ATEN graph that keeps the Linear whole (torch.export, make_fx(pre_dispatch=True)): the pair is "
            "aten.linear.default -> aten.gelu.default; the bias argument may be missing.",
    "decomposed": "decomposed graph (make_fx and aot_autograd: ATEN dialect; run_decompositions(): CORE_ATEN): a "
                  "Linear is aten.addmm(bias, x, t(w)) or aten.mm(x, t(w)), t = aten.t or aten.permute(w, [1, 0]) "
                  "in any spelling of the two dims ([-1, -2], [1, -2], [-1, 0]: compare them modulo 2); with 3-D "
                  "inputs a view (or _unsafe_view) sits between product and GELU.",
}
SINGLE_USER_NOTE = ("Fuse only when the GELU is the Linear output's ONLY reader: the fused op never produces the "
                    "pre-GELU value, so another reader (a residual add, the graph's output) would get the wrong "
                    "value or need the Linear computed twice. In decomposed graphs the view between product and "
                    "GELU must have one reader too.")


# --- reading graphs -----------------------------------------------------------------------------------------

def submodule(gm: torch.fx.GraphModule, node: torch.fx.Node) -> nn.Module | None:
    """The module a call_module node calls, or None if the pass deleted it."""
    try:
        return gm.get_submodule(node.target)
    except AttributeError:
        return None


def short_target(gm: torch.fx.GraphModule, node: torch.fx.Node) -> str:
    if node.op == "call_module":
        return f"{node.target} ({module_type_name(gm, node)})"
    return target_name(node.target)


def is_size_arithmetic(node: torch.fx.Node) -> bool:
    """A node computing a size (a SymInt) of a graph with a symbolic batch, as the capture recorded it."""
    return (node.op == "call_function" and node.target in SIZE_FUNCTIONS
            and isinstance(node.meta.get("val", node.meta.get("example_value")), (int, torch.SymInt)))


def kind(gm: torch.fx.GraphModule, node: torch.fx.Node, sizes: frozenset = frozenset()) -> str | None:
    """fused | linear | gelu | plumbing | the target's name; None for placeholder and output. `sizes`: names of
    the size arithmetic nodes of the graph as captured (a rebuilt graph no longer records SymInt values)."""
    if node.op in ("placeholder", "output"):
        return None
    if node.op == "get_attr":
        return "plumbing"
    if node.op == "call_module":
        module = submodule(gm, node)
        if isinstance(module, nn.Linear):
            return "linear"
        if isinstance(module, nn.GELU):
            return "gelu"
        return short_target(gm, node)
    if is_size_arithmetic(node) or (node.name in sizes and node.op == "call_function"
                                    and node.target in SIZE_FUNCTIONS):
        return "plumbing"  # sizes (SymInts): the view sandwich's arithmetic under a symbolic batch
    if node.op == "call_function":
        if node.target == FUSED:
            return "fused"
        if node.target in LINEAR_FUNCTIONS:
            return "linear"
        if node.target in GELU_FUNCTIONS:
            return "gelu"
        if node.target in PLUMBING_FUNCTIONS:
            return "plumbing"
    return short_target(gm, node)


@dataclass
class Census:
    """What a graph computes, counted by kind."""

    fused: list
    linears: list
    gelus: list
    others: Counter
    dead: list
    packets: list

    @classmethod
    def of(cls, gm: torch.fx.GraphModule, sizes: frozenset = frozenset()) -> "Census":
        kinds = {node: kind(gm, node, sizes) for node in gm.graph.nodes}
        return cls(
            fused=[n for n, k in kinds.items() if k == "fused"],
            linears=[n for n, k in kinds.items() if k == "linear"],
            gelus=[n for n, k in kinds.items() if k == "gelu"],
            others=Counter(k for k in kinds.values() if k not in (None, "fused", "linear", "gelu", "plumbing")),
            dead=[n.name for n, k in kinds.items() if k is not None and not n.users],
            packets=[n for n in gm.graph.nodes if n.op == "call_function" and n.target is torch.ops.kata.linear_gelu],
        )


def approximate_of(node: torch.fx.Node) -> object:
    return node.args[3] if len(node.args) > 3 else node.kwargs.get("approximate", "none")


def format_graph(gm: torch.fx.GraphModule, limit: int = 16) -> str:
    """The op nodes of `gm`, one per line, the way `print(gm.graph)` would say them but shorter."""
    def arg(a):
        if isinstance(a, torch.fx.Node):
            return a.name
        if isinstance(a, torch.Tensor):
            return f"<{type(a).__name__} {list(a.shape)}>"
        if isinstance(a, (list, tuple)):
            return "[" + ", ".join(arg(x) for x in a) + "]"
        return repr(a)

    lines = []
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr"):
            continue
        if node.op == "output":
            lines.append(f"    return {arg(node.args[0])}")
            continue
        args = [arg(a) for a in node.args] + [f"{k}={arg(v)}" for k, v in node.kwargs.items()]
        lines.append(f"    {node.name} = {short_target(gm, node)}({', '.join(args)})")
    if len(lines) > limit:
        lines = lines[:limit - 1] + [f"    … {len(lines) - limit + 1} more nodes"]
    return "\n".join(lines)


@dataclass(frozen=True)
class Pair:
    """A GELU reading a linear-looking node (directly or through one reshape), as captured; for messages."""

    linear: str
    gelu: str
    unsafe: str  # why the lesson does not fuse it ("" when it is a safe pair)

    def __str__(self) -> str:
        return f"{self.linear} -> {self.gelu}" + (f" ({self.unsafe})" if self.unsafe else "")


def is_transpose(node: object) -> bool:
    """aten.t(w), aten.permute(w, dims) with dims [1, 0] modulo 2, aten.transpose.int(w, d0, d1) with d0, d1 the two
    dims modulo 2 (a spelling no Linear decomposes to, which a pass may fuse or leave): a 2-D weight transposed. For
    the messages' reasons only."""
    if not isinstance(node, torch.fx.Node) or node.op != "call_function":
        return False
    if node.target == aten.t.default:
        return True
    if node.target == aten.permute.default:
        return [d % 2 for d in node.args[1]] == [1, 0]
    return node.target == aten.transpose.int and {node.args[1] % 2, node.args[2] % 2} == {0, 1}


def pairs_in(gm: torch.fx.GraphModule) -> list[Pair]:
    """Every GELU that reads a Linear-looking node, with the reason the lesson's rules leave it unfused, if any."""
    pairs = []
    for node in gm.graph.nodes:
        if kind(gm, node) != "gelu" or not node.args or not isinstance(node.args[0], torch.fx.Node):
            continue
        source, reshape = node.args[0], None
        if source.op == "call_function" and source.target in RESHAPES and isinstance(source.args[0], torch.fx.Node):
            source, reshape = source.args[0], source
        if kind(gm, source) != "linear":
            continue
        why = []
        for module_node, base in ((node, nn.GELU), (source, nn.Linear)):
            module = submodule(gm, module_node) if module_node.op == "call_module" else None
            if module is not None and type(module).forward is not base.forward:
                why.append(f"{module_node.target} is a {type(module).__name__}, whose forward overrides "
                           f"nn.{base.__name__}.forward")
        if source.op == "call_function" and source.target in (aten.addmm.default, aten.mm.default):
            matrix = source.args[-1]
            if not is_transpose(matrix):
                spelled = ""
                if isinstance(matrix, torch.fx.Node) and matrix.op == "call_function" and matrix.target in (
                        aten.permute.default, aten.transpose.int):
                    spelled = (f" = {target_name(matrix.target)}("
                               f"{', '.join(getattr(a, 'name', str(a)) for a in matrix.args)})")
                why.append(f"{source.name} multiplies by {getattr(matrix, 'name', matrix)}{spelled}, not by a "
                           f"transposed weight")
            if source.kwargs.get("beta", 1) != 1 or source.kwargs.get("alpha", 1) != 1:
                why.append(f"{source.name} scales: beta={source.kwargs.get('beta', 1)}, "
                           f"alpha={source.kwargs.get('alpha', 1)}")
        for value, reader in ((source, reshape or node), (reshape, node)):
            others = [u.name for u in (value.users if value is not None else ()) if u is not reader]
            if others:
                why.append(f"{value.name} is also read by {', '.join(others)}")
        pairs.append(Pair(source.name, node.name, "; ".join(why)))
    return pairs


# --- what each model should become ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """A model and what a correct pass does to it, stated from the model's design (not from any pass)."""

    title: str
    build: Callable[[], nn.Module]
    input_shape: tuple[int, ...]
    linears: int              # linear computations in the model
    gelus: int                # GELU computations in the model
    fused: tuple[str, ...]    # `approximate` of each SAFE Linear -> GELU pair, sorted
    dtype: torch.dtype = torch.float32
    note: str = ""            # the rule this model is about, added to a wrong fused count's message
    edit: Callable[[torch.fx.GraphModule], None] | None = None  # a change made by hand to the captured graph

    def model(self) -> nn.Module:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            return self.build().to(self.dtype).eval()

    def inputs(self) -> tuple[torch.Tensor, ...]:
        generator = torch.Generator().manual_seed(1)
        return (torch.randn(*self.input_shape, generator=generator, dtype=self.dtype),)


APPROXIMATE = {"gelu": "none", "gelu_tanh": "tanh"}


def case_from_spec(spec: MLPSpec, title: str = "the random MLP below") -> Case:
    """Expected counts read off the spec: a layer is a safe pair iff its activation is a GELU and its Linear
    output is not reused (no residual add, not returned)."""
    safe = sorted(APPROXIMATE[layer.activation] for layer in spec.layers
                  if layer.activation in APPROXIMATE and layer.reuse == "none")
    gelus = sum(layer.activation in APPROXIMATE for layer in spec.layers)
    return Case(title, lambda: build_mlp(spec), (*spec.batch_shape, spec.in_features),
                len(spec.layers), gelus, tuple(safe), spec.torch_dtype)


def mlp(title: str, layers, batch=(3,), style="modules") -> Case:
    spec = MLPSpec(in_features=4, layers=tuple(LayerSpec(*layer) for layer in layers), batch_shape=batch, style=style)
    return case_from_spec(spec, f"{title}, input {(*batch, 4)}")


TWO_PAIRS = [(6, True, "gelu_tanh"), (5, False, "gelu"), (3, True, "relu")]
TWO_PAIRS_TEXT = "the MLP fc0 -> GELU(tanh) -> fc1 (no bias) -> GELU -> fc2 -> ReLU"
TWO_PAIRS_2D = mlp(TWO_PAIRS_TEXT, TWO_PAIRS)
TWO_PAIRS_3D = mlp(TWO_PAIRS_TEXT, TWO_PAIRS, batch=(2, 3))
TWO_PAIRS_4D = mlp(TWO_PAIRS_TEXT, TWO_PAIRS, batch=(2, 2, 3))
ONE_PAIR_3D = mlp("the MLP fc0 -> GELU", [(5, True, "gelu")], batch=(2, 3))
ONE_PAIR_2D = mlp("the MLP fc0 -> GELU", [(5, True, "gelu")])
FUNCTIONAL_PAIRS = mlp(f"{TWO_PAIRS_TEXT}, written with F.linear/F.gelu", TWO_PAIRS, style="functional")
NO_BIAS_LAYERS = [(5, False, "gelu"), (3, False, "gelu_tanh")]
NO_BIAS_TEXT = "the MLP fc0 (no bias) -> GELU -> fc1 (no bias) -> GELU(tanh)"
NO_BIAS = mlp(NO_BIAS_TEXT, NO_BIAS_LAYERS)
NO_BIAS_3D = mlp(NO_BIAS_TEXT, NO_BIAS_LAYERS, batch=(2, 3))
TANH_ONLY = mlp("the MLP fc0 -> GELU(tanh) -> fc1 -> GELU(tanh)", [(5, True, "gelu_tanh"), (3, True, "gelu_tanh")])
RESIDUAL_LAYERS = [(4, True, "gelu", "residual"), (3, True, "gelu")]
RESIDUAL_TEXT = "the MLP z0 = fc0(x); h = GELU(z0) + z0 (z0 read twice); fc1 -> GELU"
RESIDUAL_3D = mlp(RESIDUAL_TEXT, RESIDUAL_LAYERS, batch=(2, 3))
RETURNED_LAYERS = [(5, False, "gelu_tanh", "return"), (3, True, "gelu")]
RETURNED_TEXT = "the MLP z0 = fc0(x) (no bias); GELU(tanh); fc1 -> GELU; returns (out, z0)"
RETURNED_3D = mlp(RETURNED_TEXT, RETURNED_LAYERS, batch=(2, 3))
TWO_READERS = mlp("the MLP z0 = fc0(x); h0 = GELU(z0) + z0; z1 = fc1(h0) (no bias); h1 = GELU(tanh)(z1); "
                  "fc2 -> GELU; returns (out, z1)",
                  [(4, True, "gelu", "residual"), (5, False, "gelu_tanh", "return"), (3, True, "gelu")])


class TwoGelus(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        z = self.fc(x)
        return F.gelu(z) + F.gelu(z, approximate="tanh")


TWO_GELUS = Case(
    "z = fc(x); gelu(z) + gelu(z, approximate='tanh') (two GELUs read z)", TwoGelus, (3, 4), linears=1, gelus=2,
    fused=(),
    note="The GELU must be the Linear output's ONLY reader, and a second GELU is a reader like any other: each fused "
         "node computes the product again, so fusing both GELUs runs the Linear twice (and fusing one leaves z for "
         "the other). list(linear_node.users) == [gelu_node]: here z has two readers, no pair is safe.")


class InPlaceOnOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        z = self.fc(x)
        z.add_(1.0)  # in place on the Linear's output: its result is read by nobody, yet it changes z
        return F.gelu(z)


INPLACE_READER_NOTE = (
    "Every reader of the Linear's output counts, even an in-place op whose own result nobody reads: z.add_(1.0) "
    "changes z, and the GELU reads the changed z. list(linear_node.users) == [gelu_node] does not hold (z has two "
    "users), so leave the pair; and never erase such a node as dead (Node.is_impure() is False for a call_method "
    "add_): it has a side effect.")
INPLACE_ON_OUTPUT = Case(
    "z = fc(x); z.add_(1.0) (in place on the Linear's output, its result read by nobody); gelu(z), x of shape (2, 3, 4)",
    InPlaceOnOutput, (2, 3, 4), linears=1, gelus=1, fused=(), note=INPLACE_READER_NOTE)


def add_in_place_reader(at: str) -> Callable[[torch.fx.GraphModule], None]:
    """By hand: an unread `aten.add_.Tensor(v, 1.0)` just after v, v the first Linear's output ("product") or, in a
    decomposed graph, the view between that product and its GELU ("view"; the product where there is no view).
    The aten captures of torch 2.13 thread an in-place op (the GELU reads the add_), so only a graph built by hand, or
    another pass, leaves one unread there."""
    def edit(gm: torch.fx.GraphModule) -> None:
        value = next(n for n in gm.graph.nodes if programs.is_linear_node(gm, n))
        users = list(value.users)
        if at == "view" and len(users) == 1 and users[0].op == "call_function" and users[0].target in RESHAPES:
            value = users[0]
        with gm.graph.inserting_after(value):
            gm.graph.call_function(aten.add_.Tensor, (value, 1.0))
        gm.recompile()
    return edit


INPLACE_ON_PRODUCT_3D = Case(
    "the MLP fc0 -> GELU, input (2, 3, 4), with an unread aten.add_.Tensor(z, 1.0) added by hand to the captured "
    "graph just after fc0's output z (in decomposed graphs the addmm's (6, 5) matrix, between the product and its view)",
    ONE_PAIR_3D.build, (2, 3, 4), linears=1, gelus=1, fused=(), edit=add_in_place_reader("product"),
    note=INPLACE_READER_NOTE)
INPLACE_ON_VIEW_3D = Case(
    "the MLP fc0 -> GELU, input (2, 3, 4), with an unread aten.add_.Tensor(v, 1.0) added by hand to the captured graph "
    "just after the view v of fc0's product (between the view and the GELU)",
    ONE_PAIR_3D.build, (2, 3, 4), linears=1, gelus=1, fused=(), edit=add_in_place_reader("view"),
    note=INPLACE_READER_NOTE)


class SharedInput(nn.Module):
    """Two Linears on one N-D input: under a symbolic batch their view sandwiches read the same size nodes."""

    def __init__(self, second: str = "gelu_tanh"):
        super().__init__()
        self.second = second
        self.a, self.b = nn.Linear(4, 5), nn.Linear(4, 5)

    def forward(self, x):
        z = self.b(x)
        return F.gelu(self.a(x)), (F.gelu(z, approximate="tanh") if self.second == "gelu_tanh" else torch.relu(z))


SHARED_INPUT_3D = Case(
    "gelu(a(x)), gelu(b(x), approximate='tanh'): two nn.Linear(4, 5) on one input x of shape (2, 3, 4)", SharedInput,
    (2, 3, 4), linears=2, gelus=2, fused=("none", "tanh"),
    note="With a symbolic batch both products' views read the same size arithmetic (sym_size.int(x, 0), "
         "operator.mul): if you drop a fused pair's views, drop only the size nodes nobody else reads (while b's views "
         "still read them, they stay; once both pairs are fused, nothing reads them). Erase a node only once it has "
         "no users.")
SHARED_INPUT_MIXED_3D = Case(
    "gelu(a(x)), relu(b(x)): two nn.Linear(4, 5) on one input x of shape (2, 3, 4), one pair and a Linear -> ReLU",
    lambda: SharedInput("relu"), (2, 3, 4), linears=2, gelus=1, fused=("none",), note=SHARED_INPUT_3D.note)


class LinearThenFunctionalGelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 6)
        self.block = nn.Sequential(nn.Linear(6, 3, bias=False), nn.GELU())

    def forward(self, x):
        return self.block(F.gelu(self.fc(x), approximate="tanh"))


LINEAR_THEN_F_GELU = Case(
    "block(F.gelu(fc(x), approximate='tanh')), block = nn.Sequential(nn.Linear(6, 3, bias=False), nn.GELU())",
    LinearThenFunctionalGelu, (3, 4), linears=2, gelus=2, fused=("none", "tanh"))


class FunctionalCalls(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1, self.w2 = nn.Parameter(torch.randn(5, 4)), nn.Parameter(torch.randn(5, 4))
        self.b2 = nn.Parameter(torch.randn(5))

    def forward(self, x):
        return F.gelu(F.linear(x, self.w1), approximate="tanh") * F.gelu(F.linear(x, self.w2, bias=self.b2))


FUNCTIONAL_CALLS = Case(
    "F.gelu(F.linear(x, w1), approximate='tanh') * F.gelu(F.linear(x, w2, bias=b2))",
    FunctionalCalls, (3, 4), linears=2, gelus=2, fused=("none", "tanh"))


class SharedLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.act = nn.Linear(4, 4), nn.GELU()

    def forward(self, x):
        a = self.act(self.fc(x))
        b = self.fc(torch.relu(x))
        return self.act(self.fc(a + b))


SHARED_LINEAR = Case(
    "one nn.Linear `fc` called three times: a = act(fc(x)); b = fc(relu(x)); act(fc(a + b))",
    SharedLinear, (3, 4), linears=3, gelus=2, fused=("none", "none"))


class Bystanders(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc_relu, self.fc_gelu, self.act = nn.Linear(4, 4), nn.Linear(4, 4), nn.GELU()

    def forward(self, x):
        a = torch.relu(self.fc_relu(x))   # a Linear followed by something else
        b = F.gelu(torch.sin(x))          # a GELU of something else
        c = self.act(self.fc_gelu(x))     # the one pair
        return a * b + c * F.gelu(x)      # a GELU of the graph's input (a placeholder: no module, no op)


BYSTANDERS = Case(
    "relu(fc_relu(x)) * gelu(sin(x)) + act(fc_gelu(x)) * gelu(x) (one pair among bystanders)",
    Bystanders, (3, 4), linears=2, gelus=3, fused=("none",))


class GeluReadTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.act = nn.Linear(4, 5), nn.GELU(approximate="tanh")

    def forward(self, x):
        g = self.act(self.fc(x))
        return g * torch.sigmoid(g)


GELU_READ_TWICE = Case(
    "g = GELU(tanh)(fc(x)); g * sigmoid(g) (the GELU's output is read twice, the Linear's once)",
    GeluReadTwice, (3, 4), linears=1, gelus=1, fused=("tanh",),
    note="The guard is about the readers of the LINEAR's output only; the GELU's own readers do not matter to it. "
         "The fused node produces exactly the GELU's value, so every reader of the GELU can read the fused node "
         "instead (gelu_node.replace_all_uses_with(fused)). Here fc's output has one reader, the GELU: fuse.")


class GateBeforeGelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        z = self.fc(x)
        gate = torch.sigmoid(z)  # read before the GELU: z's first reader is not the GELU
        return F.gelu(z) * gate


GATE_BEFORE_GELU = Case(
    "z = fc(x); gate = sigmoid(z); gelu(z) * gate (z is read by the sigmoid first, then by the GELU)",
    GateBeforeGelu, (3, 4), linears=1, gelus=1, fused=(),
    note="The guard is about every reader of the Linear's output, in any order: here the sigmoid reads z before the "
         "GELU does. `list(linear_node.users) == [gelu_node]`, not 'the first user is the GELU', and not 'the GELU is the "
         "last use of z' either: the fused node removes z for every reader, before the GELU or after it.")


class TorchLinearSubclasses(nn.Module):
    """Two subclasses of nn.Linear from torch itself; symbolic_trace keeps both as call_module nodes (their classes
    live under torch.nn / torch.ao.nn). NonDynamicallyQuantizableLinear only renames nn.Linear (it is
    nn.MultiheadAttention's out_proj); torch.ao.nn.qat.Linear overrides forward to fake-quantize its weight."""

    def __init__(self):
        super().__init__()
        from torch.ao.nn.qat import Linear as QATLinear
        from torch.ao.quantization import get_default_qat_qconfig
        from torch.nn.modules.linear import NonDynamicallyQuantizableLinear

        self.out_proj, self.act = NonDynamicallyQuantizableLinear(4, 6), nn.GELU()
        self.qat_fc, self.act_tanh = QATLinear(6, 5, qconfig=get_default_qat_qconfig("x86")), nn.GELU(approximate="tanh")

    def forward(self, x):
        return self.act_tanh(self.qat_fc(self.act(self.out_proj(x))))


LINEAR_SUBCLASSES = Case(
    "act_tanh(qat_fc(act(out_proj(x)))), out_proj a NonDynamicallyQuantizableLinear (keeps nn.Linear.forward), "
    "qat_fc a torch.ao.nn.qat.Linear (overrides forward: fake-quantizes its weight)",
    TorchLinearSubclasses, (3, 4), linears=2, gelus=2, fused=("none",),
    note="A call_module node is a Linear when its module is an nn.Linear or a subclass that keeps nn.Linear's "
         "forward (type(module).forward is nn.Linear.forward): out_proj fuses. qat_fc's class overrides forward "
         "(it fake-quantizes the weight), so fusing it into linear_gelu(x, weight, bias) would compute "
         "something else: leave it.")


class GeluOfMatmul(nn.Module):
    """gelu(x @ w): a matrix product by a square weight used as it is, not transposed. Decomposed, it is
    aten.mm(x, w) with no t/permute: no Linear. (Square, so fusing it with w as the Linear's weight runs and
    silently computes gelu(x @ w.T) instead.)"""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        w = self.w
        return (F.gelu(x @ w) + F.gelu(x @ w.permute(0, 1)) + F.gelu(x @ w.permute(-2, 1))
                + F.gelu(x @ w.permute(0, -1)) + F.gelu(x @ w.transpose(1, 1)) + F.gelu(x @ w.transpose(0, 0))
                + F.gelu(x @ w.transpose(-1, 1)) + F.gelu(x @ w.transpose(0, -2)))


GELU_OF_MATMUL = Case(
    "gelu(x @ w) + gelu(x @ w.permute(0, 1)) + the same with permute(-2, 1), permute(0, -1), transpose(1, 1), "
    "transpose(0, 0), transpose(-1, 1) and transpose(0, -2), w a square (4, 4) parameter used untransposed (each "
    "permute keeps the dims in order, each transpose swaps a dim with itself)",
    GeluOfMatmul, (3, 4), linears=8, gelus=8, fused=(),
    note="A decomposed Linear multiplies by the TRANSPOSED weight: addmm(b, x, t(w)) or mm(x, t(w)), t = aten.t or "
         "aten.permute(w, [1, 0]). This mm multiplies by w itself: it is some other matrix product, not a Linear. "
         "Fusing it as linear_gelu(x, w, None) would compute gelu(x @ w.T). permute(w, [0, 1]) is no transpose "
         "either, nor [-2, 1] or [0, -1] (the same dims, counted from the end): compare the dims modulo 2. Nor is "
         "aten.transpose.int(w, d0, d1) unless d0 and d1 are the two dims (modulo 2): transpose(1, 1), (0, 0), "
         "(-1, 1) or (0, -2) swaps a dim with itself and leaves w as it is; read the dims, as for permute.")


class ScaledAddmm(nn.Module):
    """addmm with beta or alpha other than 1: beta * b + alpha * (x @ w.T) is no Linear."""

    def __init__(self):
        super().__init__()
        self.w, self.b = nn.Parameter(torch.randn(4, 4)), nn.Parameter(torch.randn(4))

    def forward(self, x):
        w_t = self.w.t()
        return (F.gelu(torch.addmm(self.b, x, w_t, beta=0.5)) + F.gelu(torch.addmm(self.b, x, w_t, beta=2.0))
                + F.gelu(torch.addmm(self.b, x, w_t, alpha=0.5)) + F.gelu(torch.addmm(self.b, x, w_t, alpha=2.0)))


SCALED_ADDMM = Case(
    "gelu(addmm(b, x, w.t(), beta=0.5)) + the same with beta=2, alpha=0.5 and alpha=2 (torch.addmm written by hand)",
    ScaledAddmm, (3, 4), linears=4, gelus=4, fused=(),
    note="aten.addmm(b, x, t(w), beta=..., alpha=...) computes beta * b + alpha * (x @ w.T): a Linear only when "
         "both are 1 (their defaults, all a Linear decomposes to). Fusing a scaled one into linear_gelu(x, w, b) "
         "drops the scaling.")


class ReshapedProducts(nn.Module):
    """Three hand-written products whose reshapes are not a flatten-and-restore of the same input: the first
    regroups the batch ((B, 3) rows come back as (3, B)), the second reads a relu of the flattened input, so no
    view sits on its input side, the third splits each row of 4 features into 2 rows of 2 (its weight is (5, 2))
    and restores the batch with 10 features. Decomposed, all are view/relu -> mm(x, t(w)) -> view -> gelu: Linear ->
    GELU pairs (a hand-written x @ w.t() is F.linear), but dropping the views changes the result's shape (or leaves
    an x whose features do not fit the weight)."""

    def __init__(self):
        super().__init__()
        self.w1, self.w2 = nn.Parameter(torch.randn(5, 4)), nn.Parameter(torch.randn(5, 4))
        self.w3 = nn.Parameter(torch.randn(5, 2))

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        regrouped = F.gelu((flat @ self.w1.t()).reshape(x.shape[1], -1, 5))     # (3, B, 5): rows regrouped
        restored = F.gelu((torch.relu(flat) @ self.w2.t()).reshape(*x.shape[:-1], 5), approximate="tanh")
        refeatured = F.gelu((x.reshape(-1, 2) @ self.w3.t()).reshape(*x.shape[:-1], 10))  # (B, 3, 10)
        return regrouped.transpose(0, 1) + restored, refeatured


RESHAPED_TEXT = ("a = gelu((x.reshape(-1, 4) @ w1.t()).reshape(x.shape[1], -1, 5)) (regroups the batch); "
                 "b = gelu((relu(x.reshape(-1, 4)) @ w2.t()).reshape(*x.shape[:-1], 5), approximate='tanh') (no view "
                 "on the product's input); c = gelu((x.reshape(-1, 2) @ w3.t()).reshape(*x.shape[:-1], 10)) (w3 of "
                 "shape (5, 2): the views change the feature size); returns (a.transpose(0, 1) + b, c)")
RESHAPED_NOTE = ("All three products are Linear -> GELU pairs, but their reshapes are not a flatten and a restore of "
                 "the same input: one regroups the batch, one has no view on its input, one changes the feature size "
                 "(x's last dim is not the weight's). Keep the shape plumbing (the fused node takes the product's own "
                 "x, the existing view reshapes its result), or drop the views only after proving from "
                 "node.meta['val'].shape that the input view keeps the last dim and flattens exactly the leading "
                 "dims that the output view restores. With a symbolic batch a size is a SymInt: prove equality for "
                 "every size (statically_known_true(a == b)), not with bool(a == b), which the example's sizes decide.")
RESHAPED_PRODUCTS = Case(f"{RESHAPED_TEXT}, x of shape (2, 3, 4)", ReshapedProducts, (2, 3, 4), linears=3, gelus=3,
                         fused=("none", "none", "tanh"), note=RESHAPED_NOTE)
# batch 3 == the second dim: at the example size the regrouping view (3, B, 5) has the input's own (B, 3); only
# under a symbolic batch (export with a Dim) is it no identity
RESHAPED_SQUARE = Case(f"{RESHAPED_TEXT}, x of shape (3, 3, 4) (batch 3, the size of dim 1, at the example)",
                       ReshapedProducts, (3, 3, 4), linears=3, gelus=3, fused=("none", "none", "tanh"),
                       note=RESHAPED_NOTE)


class TransposeSpellings(nn.Module):
    """Hand-written products by a weight transposed two ways: `w.permute(-1, -2)` stays aten.permute(w, [-1, -2]) in
    every decomposed capture; `w.t()` is aten.t (make_fx, aot_autograd) or permute(w, [1, 0]) (run_decompositions)."""

    def __init__(self):
        super().__init__()
        self.w1, self.w2 = nn.Parameter(torch.randn(5, 4)), nn.Parameter(torch.randn(5, 4))
        self.w3, self.w4 = nn.Parameter(torch.randn(5, 4)), nn.Parameter(torch.randn(5, 4))

    def forward(self, x):
        return (F.gelu(x @ self.w1.permute(-1, -2)) + F.gelu(x @ self.w2.t(), approximate="tanh")
                + F.gelu(x @ self.w3.permute(1, -2)) + F.gelu(x @ self.w4.permute(-1, 0)))


TRANSPOSE_SPELLINGS = Case(
    "gelu(x @ w1.permute(-1, -2)) + gelu(x @ w2.t(), approximate='tanh') + gelu(x @ w3.permute(1, -2)) "
    "+ gelu(x @ w4.permute(-1, 0)), w of shape (5, 4): the transposed weight spelled four ways",
    TransposeSpellings, (3, 4), linears=4, gelus=4, fused=("none", "none", "none", "tanh"),
    note="A 2-D weight transposed is a Linear's weight however the permute spells it: aten.permute(w, [1, 0]), "
         "[-1, -2], [1, -2] or [-1, 0] (each dim counted from the start or from the end): compare the dims modulo 2, "
         "not the list literally. Only a permute that keeps the dims in place ([0, 1] in any spelling) is none.")


def add_size_reader(gm: torch.fx.GraphModule) -> None:
    """By hand: s = aten.sym_size.int(z, 0) reading the first Linear's output z, and the first output times s."""
    linear = next(n for n in gm.graph.nodes if programs.is_linear_node(gm, n))
    with gm.graph.inserting_before(next(n for n in gm.graph.nodes if n.op == "output")):
        size = gm.graph.call_function(aten.sym_size.int, (linear, 0))
    programs.scale_first_output(gm, [size])


SIZE_READER_3D = Case(
    "the MLP fc0 -> GELU, input (2, 3, 4), with s = aten.sym_size.int(z, 0) added by hand to the captured graph "
    "(z: fc0's output, in decomposed graphs the addmm's (6, 5) matrix) and the output multiplied by s",
    ONE_PAIR_3D.build, (2, 3, 4), linears=1, gelus=1, fused=(), edit=add_size_reader,
    note="Every reader of the Linear's output counts, whatever it reads it for: a sym_size.int of it reads its size, "
         "and after a fusion that size is gone (the fused node has the GELU's shape, the N-D batch if you dropped "
         "the views). No capture of torch 2.13 makes such a node, but another pass or a graph built by hand can: "
         "leave the pair unfused.")


# the same reader with no view between the Linear and its GELU: aten.linear (export), the torch-level linear (Dynamo),
# a call_module (symbolic_trace), a 2-D addmm (make_fx): a pass that moves the sym_size.int onto the fused node (the
# same size when there is no view) computes the same numbers, so only the fused count shows it
SIZE_READER_2D = Case(
    "the MLP fc0 -> GELU, input (3, 4), with s = aten.sym_size.int(z, 0) added by hand to the captured graph "
    "(z: fc0's output, which the GELU reads with no view between) and the output multiplied by s",
    ONE_PAIR_2D.build, (3, 4), linears=1, gelus=1, fused=(), edit=add_size_reader,
    note="Every reader of the Linear's output counts, whatever it reads it for, and wherever it sits: a sym_size.int "
         "of it is a second user, so the pair is not the GELU's alone. Do not move that reader onto the fused node "
         "(even where the size would be the same): leave the pair unfused. No capture of torch 2.13 makes such a "
         "node, but another pass or a graph built by hand can.")


class UserSubclasses(nn.Module):
    """nn.Linear and nn.GELU subclasses of a user's own, which a custom Tracer keeps whole as call_module nodes."""

    def __init__(self):
        super().__init__()
        from katas.common.zoo import KeepsGELU, KeepsLinear, ScaledLinear, ShiftedGELU

        self.fc_keeps, self.act_keeps = KeepsLinear(4, 5), KeepsGELU(approximate="tanh")  # both keep forward
        self.fc, self.act_shifted = nn.Linear(5, 5), ShiftedGELU()                         # forward: gelu(x - 0.5)
        self.fc_scaled, self.act = ScaledLinear(5, 3), nn.GELU()                           # forward: 0.5 * linear

    def forward(self, x):
        return self.act(self.fc_scaled(self.act_shifted(self.fc(self.act_keeps(self.fc_keeps(x))))))


USER_SUBCLASSES = Case(
    "act(fc_scaled(act_shifted(fc(act_keeps(fc_keeps(x)))))): fc_keeps a KeepsLinear and act_keeps a "
    "KeepsGELU(approximate='tanh') (both keep their base's forward); act_shifted a ShiftedGELU (an nn.GELU "
    "subclass whose forward is gelu(x - 0.5)); fc_scaled a ScaledLinear (an nn.Linear subclass whose forward is "
    "0.5 * linear)",
    UserSubclasses, (3, 4), linears=3, gelus=3, fused=("tanh",),
    note="A module is a Linear (a GELU) when it is an nn.Linear (nn.GELU) or a subclass that keeps its forward: "
         "type(module).forward is nn.Linear.forward (nn.GELU.forward). isinstance also holds for ScaledLinear, whose "
         "forward computes 0.5 * linear, and for ShiftedGELU, whose forward computes gelu(x - 0.5): fusing either "
         "into linear_gelu computes something else. Such call_module nodes appear when a custom fx.Tracer keeps "
         "user subclasses whole (is_leaf_module), or in a hand-built graph.")


class DeepSubclasses(nn.Module):
    """Subclasses two levels below nn.Linear / nn.GELU: their kind is their class's forward, read through every base
    (a parent that overrides forward, a child that assigns the base's forward back)."""

    def __init__(self):
        super().__init__()
        from katas.common.zoo import (InheritsScaledLinear, InheritsShiftedGELU, KeepsKeepsGELU, KeepsKeepsLinear,
                                      RestoresGELU, RestoresLinear)

        self.fc0, self.act0 = KeepsKeepsLinear(4, 5), KeepsKeepsGELU(approximate="tanh")  # both keep forward
        self.fc1, self.act1 = InheritsScaledLinear(5, 5), nn.GELU()  # fc1's forward: ScaledLinear's, 0.5 * linear
        self.fc2, self.act2 = nn.Linear(5, 5), InheritsShiftedGELU()  # act2's forward: ShiftedGELU's, gelu(x - 0.5)
        self.fc3, self.act3 = RestoresLinear(5, 3), RestoresGELU()  # forward = nn.Linear.forward / nn.GELU.forward

    def forward(self, x):
        for i in range(4):
            x = getattr(self, f"act{i}")(getattr(self, f"fc{i}")(x))
        return x


DEEP_SUBCLASSES = Case(
    "act3(fc3(act2(fc2(act1(fc1(act0(fc0(x)))))))): fc0 a KeepsKeepsLinear and act0 a KeepsKeepsGELU('tanh') (keep "
    "their base's forward through their parent); fc1 an InheritsScaledLinear (inherits ScaledLinear's forward, 0.5 * "
    "linear); act2 an InheritsShiftedGELU (inherits ShiftedGELU's forward, gelu(x - 0.5)); fc3 a RestoresLinear and "
    "act3 a RestoresGELU (children of the overriding classes whose forward is the base's again)",
    DeepSubclasses, (3, 4), linears=4, gelus=4, fused=("none", "tanh"),
    note="A module is a Linear (a GELU) when type(module).forward is nn.Linear.forward (nn.GELU.forward): the forward "
         "its class ends up with, through every base -- not whether its parent is nn.Linear, nor whether its own "
         "class body defines a forward.")


class SameNames(nn.Module):
    """fc0 -> act0 -> fc1 -> act1, the classes chosen per instance: graphs in which the same names (`fc0`, `act1`)
    mean different modules."""

    def __init__(self, linear0: type = nn.Linear, gelu1: type = nn.GELU):
        super().__init__()
        self.fc0, self.act0 = linear0(4, 5), nn.GELU()
        self.fc1, self.act1 = nn.Linear(5, 3), gelu1()

    def forward(self, x):
        return self.act1(self.fc1(self.act0(self.fc0(x))))


class SameNamesProduct(nn.Module):
    """gelu(x @ w.t()) or gelu(x @ w) (a square w): decomposed, both are a node named `mm` read by a GELU."""

    def __init__(self, transposed: bool = True):
        super().__init__()
        self.transposed = transposed
        self.w = nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        return F.gelu(x @ (self.w.t() if self.transposed else self.w))


def _same_names_cases() -> tuple[Case, ...]:
    from katas.common.zoo import ScaledLinear, ShiftedGELU

    plain = Case("act1(fc1(act0(fc0(x)))), fc0 and fc1 nn.Linear, act0 and act1 nn.GELU", SameNames, (3, 4),
                 linears=2, gelus=2, fused=("none", "none"), note=STATE_NOTE)
    other = Case("act1(fc1(act0(fc0(x)))) with the SAME names, but fc0 a ScaledLinear (forward: 0.5 * linear) and act1 "
                 "a ShiftedGELU (forward: gelu(x - 0.5))", lambda: SameNames(ScaledLinear, ShiftedGELU), (3, 4),
                 linears=2, gelus=2, fused=(), note=STATE_NOTE)
    product = Case("gelu(x @ w.t()), w of shape (4, 4): decomposed, mm(x, t(w))", SameNamesProduct, (3, 4),
                   linears=1, gelus=1, fused=("none",), note=STATE_NOTE)
    untransposed = Case("gelu(x @ w), w of shape (4, 4): decomposed, a node with the same name mm, but mm(x, w)",
                        lambda: SameNamesProduct(False), (3, 4), linears=1, gelus=1, fused=(), note=STATE_NOTE)
    return plain, other, product, untransposed


STATE_NOTE = ("This check runs several graphs through your pass one after another, in one process, and the same names "
              "mean other things in each: fc0 an nn.Linear, then a ScaledLinear (forward: 0.5 * linear, no Linear); "
              "act1 an nn.GELU, then a ShiftedGELU (its forward overrides nn.GELU.forward: no GELU); mm = mm(x, w) "
              "(no Linear), then mm(x, t(w)). Two faults look alike here: a rule misjudged on this graph alone (the "
              "first line names the node and why), or state kept between calls (a module-level cache keyed by a "
              "module's name, a target or a node name carries one graph's answer into the next). Decide every match "
              "from the graph you are given, on each call anew.")


class DeadBystander(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.act = nn.Linear(4, 5), nn.GELU()

    def forward(self, x):
        torch.cos(x)  # computed, never read: the capture leaves this node dead
        return self.act(self.fc(x))


DEAD_BYSTANDER = Case("torch.cos(x) (never read); act(fc(x))", DeadBystander, (3, 4), linears=1, gelus=1,
                      fused=("none",))


class InPlaceBystander(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        h = x * 1.0
        h.add_(1.0)  # in place: its result is read by nobody, yet it changes h, which fc reads
        return F.gelu(self.fc(h))


INPLACE_NOTE = ("An in-place op (h.add_(1.0)) is a node nobody reads, yet it changes h, which the Linear reads: it has "
                "a side effect, and deleting it changes the result. A pass may delete only what its rewrite left "
                "without users, and nodes the capture left dead that have no side effects. On torch 2.13 "
                "graph.eliminate_dead_code() deletes an unread in-place call_method (Node.is_impure() is False for it) "
                "in symbolic_trace and Dynamo graphs: erase the nodes your rewrite detached instead (or pass "
                "eliminate_dead_code an is_impure_node that keeps in-place ops).")
INPLACE_BYSTANDER = Case("h = x * 1.0; h.add_(1.0) (in place, its result read by nobody); gelu(fc(h))", InPlaceBystander,
                         (3, 4), linears=1, gelus=1, fused=("none",), note=INPLACE_NOTE)


class NodesBetween(nn.Module):
    """Unrelated nodes between a Linear and its GELU, in every capture: the match is a data edge, not node order."""

    def __init__(self):
        super().__init__()
        self.fc, self.act = nn.Linear(4, 5), nn.GELU(approximate="tanh")

    def forward(self, x):
        z = self.fc(x)
        s = torch.sigmoid(x).sum()        # unrelated: reads x, not z
        return self.act(z) * s


class NodesBetweenProduct(nn.Module):
    """A hand-written product with unrelated nodes between it and its reshape, and between the reshape and the GELU."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(5, 4))

    def forward(self, x):
        product = x.reshape(-1, 4) @ self.w.t()
        r = torch.relu(x).mean()          # between the product and its reshape
        out = product.reshape(*x.shape[:-1], 5)
        c = torch.cos(x).sum()            # between the reshape and the GELU
        return F.gelu(out) + r + c


BETWEEN_NOTE = ("The match is a data edge: the GELU reads the Linear's output (through the view, in decomposed "
                "graphs). Captures record nodes in the order the model runs them, so unrelated nodes can sit between "
                "the Linear, its view and the GELU: follow node.args / node.users, never node.next.")
BETWEEN = Case("z = fc(x); s = sigmoid(x).sum(); GELU(tanh)(z) * s, x of shape (2, 3, 4): unrelated nodes (sigmoid, "
               "sum) between the Linear and its GELU", NodesBetween, (2, 3, 4), linears=1, gelus=1, fused=("tanh",),
               note=BETWEEN_NOTE)
BETWEEN_PRODUCT = Case(
    "p = x.reshape(-1, 4) @ w.t(); r = relu(x).mean(); o = p.reshape(2, 3, 5); c = cos(x).sum(); gelu(o) + r + c, x "
    "of shape (2, 3, 4): unrelated nodes between the product and its view, and between the view and the GELU",
    NodesBetweenProduct, (2, 3, 4), linears=1, gelus=1, fused=("none",), note=BETWEEN_NOTE)


class MixedForms(nn.Module):
    """One MODULE graph holding Linears of two forms: call_module (nn.Linear) and call_function F.linear (a traced
    subclass of one's own, and functional code)."""

    def __init__(self):
        super().__init__()
        from katas.common.zoo import KeepsLinear

        self.fc0, self.act0 = nn.Linear(4, 5), nn.GELU()
        self.fc1 = KeepsLinear(5, 3)  # keeps nn.Linear.forward; symbolic_trace traces it: get_attr + F.linear
        self.w2, self.b2 = nn.Parameter(torch.randn(4, 3)), nn.Parameter(torch.randn(4))
        self.act2 = nn.GELU()

    def forward(self, x):
        h = F.gelu(self.fc1(self.act0(self.fc0(x))), approximate="tanh")
        return self.act2(F.linear(h, self.w2, self.b2))


MIXED_FORMS = Case(
    "act2(F.linear(F.gelu(fc1(act0(fc0(x))), approximate='tanh'), w2, b2)): fc0 an nn.Linear and act0, act2 "
    "nn.GELU (call_module nodes), fc1 a KeepsLinear (a subclass of your own keeping nn.Linear.forward, which "
    "symbolic_trace traces into get_attr + F.linear), and an F.linear",
    MixedForms, (3, 4), linears=3, gelus=3, fused=("none", "none", "tanh"),
    note="One graph can hold several forms: symbolic_trace keeps nn.Linear / nn.GELU as call_module nodes and traces "
         "a subclass of your own, or functional code, into F.linear / F.gelu call_function nodes, side by side. Decide "
         "the form node by node, never once per graph.")


def in_dtype(case: Case, dtype: torch.dtype) -> Case:
    return dataclasses.replace(case, title=f"{case.title}, in {str(dtype).removeprefix('torch.')}", dtype=dtype)


# --- running the attempt and judging the result ---------------------------------------------------------------

def form_of(gm: torch.fx.GraphModule, method: str) -> str:
    if method in ("symbolic_trace", LEAF_TRACER):
        return "module" if any(n.op == "call_module" for n in gm.graph.nodes) else "torch"
    return {"dynamo": "torch", "make_fx_pre_dispatch": "aten", "export": "aten"}.get(method, "decomposed")


def left_dead_by_the_capture(gm: torch.fx.GraphModule) -> Counter:
    """Kinds of the pure nodes whose value never reaches the graph's output, as captured. The contract lets a pass
    remove them or keep them (graph.eliminate_dead_code() removes them)."""
    live, todo = set(), [n for n in gm.graph.nodes
                         if n.op == "output" or (n.op != "placeholder" and (n.is_impure() or in_place(n)))]
    while todo:
        node = todo.pop()
        if node not in live:
            live.add(node)
            todo.extend(node.all_input_nodes)
    return Counter(k for n in gm.graph.nodes if n not in live
                   and (k := kind(gm, n)) not in (None, "fused", "linear", "gelu", "plumbing"))


def in_place(node: torch.fx.Node) -> bool:
    """An in-place op (h.add_(1), aten.add_.Tensor): it changes its input, so it has a side effect even unread."""
    if node.op == "call_method":
        name = str(node.target)
    elif node.op == "call_function":
        name = getattr(node.target, "__name__", "") or ""
        name = name.split(".")[0]
    else:
        return False
    return name.endswith("_") and not name.startswith("_")


def meta_key_of(gm: torch.fx.GraphModule) -> str | None:
    """The meta key under which the capture recorded values: "val" (make_fx, export, aot_autograd),
    "example_value" (Dynamo), None (symbolic_trace)."""
    for key in ("val", "example_value"):
        if any(key in n.meta for n in gm.graph.nodes if n.op != "output"):
            return key
    return None


def same_size(a: object, b: object) -> bool:
    """Two sizes (ints or SymInts of the same graph) are the same for every value of the graph's symbols."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    try:
        from torch.fx.experimental.symbolic_shapes import statically_known_true
        return bool(statically_known_true(a == b)) or str(a) == str(b)
    except Exception:  # noqa: BLE001 - sizes of two different shape environments
        return str(a) == str(b)


def check_recorded_values(gm: torch.fx.GraphModule, key: str | None, dtype: torch.dtype, where: str,
                          graph_text: str) -> None:
    """Each fused node records its value under the capture's key, a tensor of the fused output's shape and the graph's
    dtype; and its x fits its weight."""
    if key is None:
        return
    for node in (n for n in gm.graph.nodes if n.op == "call_function" and n.target == FUSED):
        x = node.args[0] if node.args else node.kwargs.get("x")
        weight = node.args[1] if len(node.args) > 1 else node.kwargs.get("weight")
        x_val, w_val = recorded_value(x), recorded_value(weight)
        if not isinstance(x_val, torch.Tensor) or not isinstance(w_val, torch.Tensor) or w_val.dim() != 2:
            continue  # the operands carry no values either: nothing to compare with
        if not all(isinstance(size, int) for size in (*x_val.shape, *w_val.shape)):
            continue  # symbolic sizes: a graph rebuilt from the worker's description does not keep them, so here
            # (in-process or not) nothing is compared; the graph is run at two batch sizes instead
        expect(x_val.dim() >= 1 and same_size(x_val.shape[-1], w_val.shape[1]),
               f"After fuse_linear_gelu {where}, fused node {node.name} multiplies x {tuple(x_val.shape)} by weight "
               f"{tuple(w_val.shape)} transposed: x's last dim is not the weight's {w_val.shape[1]} features. Its x "
               f"must be what the Linear multiplied; drop the views only after proving from node.meta['val'].shape "
               f"that the input view keeps the last dim and only flattens the leading ones." + graph_text)
        want = (*x_val.shape[:-1], w_val.shape[0])
        # a graph sent back by the worker is rebuilt with each value under "val" and the keys it had in VALUE_KEYS_META
        keys = node.meta.get(VALUE_KEYS_META, tuple(k for k in VALUE_KEYS if k in node.meta))
        got = (node.meta.get("val") if VALUE_KEYS_META in node.meta else node.meta.get(key)) if key in keys else None
        others = [k for k in keys if k != key]
        expect(isinstance(got, torch.Tensor),
               f"After fuse_linear_gelu {where}, fused node {node.name} has no recorded value under meta[{key!r}]"
               f"{f' (meta[{others[0]!r}] is set instead)' if others else ''}, the key under "
               f"which this capture records every other node's value ("
               f"{'Dynamo uses' if key == 'example_value' else 'make_fx, export and aot_autograd use'} {key!r}). Passes that run after yours (shape propagation, a partitioner, your own matcher on the "
               f"next pair) read it there: copy the replaced node's meta[{key!r}] onto the fused node.")
        if not all(isinstance(size, int) for size in got.shape):
            continue  # symbolic sizes recorded for static operands: left to the run
        regrouped = (len(got.shape) == len(want) and tuple(got.shape) != tuple(want) and got.shape[-1] == want[-1]
                     and sorted(got.shape[:-1]) == sorted(want[:-1]))
        expect(not regrouped,
               f"After fuse_linear_gelu {where}, fused node {node.name} computes {tuple(want)} (x "
               f"{tuple(x_val.shape)} times weight {tuple(w_val.shape)} transposed) where the graph expects "
               f"{tuple(got.shape)}: the same sizes, grouped another way. The views you dropped did not restore x's "
               f"leading dims, they regrouped them (a reshape to {tuple(got.shape)}). Drop the views only after "
               f"proving from node.meta['val'].shape that the output view restores exactly the leading dims the "
               f"input view flattened, in order; otherwise keep the shape plumbing." + graph_text)
        expect(len(got.shape) == len(want) and all(same_size(a, b) for a, b in zip(got.shape, want))
               and got.dtype == dtype == x_val.dtype,
               f"After fuse_linear_gelu {where}, fused node {node.name} records meta[{key!r}] of shape "
               f"{tuple(got.shape)} and dtype {got.dtype}; it computes {tuple(want)} in {x_val.dtype}, the graph's "
               f"dtype (x {tuple(x_val.shape)} times weight {tuple(w_val.shape)} transposed). The recorded value must "
               f"have the fused output's shape and the graph's dtype: copy the meta of the node whose value the fused "
               f"node now produces"
               + (" (a fake tensor made anew gets torch's default dtype, float32)." if got.dtype != x_val.dtype else
                  " -- with the views dropped, that is the GELU's, not the flattened product's."
                  if len(got.shape) != len(want) else "."))


def second_size_inputs(inputs: tuple, method: str) -> tuple:
    """Inputs at another batch size for a graph captured with a symbolic batch: dim 0 (export's Dim) changed, and under
    Dynamo and aot_autograd every leading dim that had the same size (duck sizing gives them one symbol)."""
    def resized(t: torch.Tensor) -> torch.Tensor:
        batch = t.shape[0]
        shape = [batch + 2 if (i == 0 or (method not in ("export", "export_core") and size == batch)) else size
                 for i, size in enumerate(t.shape[:-1])] + [t.shape[-1]]
        generator = torch.Generator().manual_seed(2)
        return torch.randn(*shape, generator=generator, dtype=t.dtype)
    return tuple(resized(t) for t in inputs)


def tensor_placeholders_read(gm: torch.fx.GraphModule) -> set[str]:
    return {n.name for n in gm.graph.nodes
            if n.op == "placeholder" and n.users and isinstance(recorded_value(n), torch.Tensor)}


BIAS_FALSE_NOTE = ("\nRule: nn.Linear(..., bias=False) has .bias is None, so there is no parameter '<linear>.bias' to "
                   "read with get_attr: the fused node takes bias=None then.")


def without_pairs_the_capture_guards(case: Case, gm: torch.fx.GraphModule) -> Case:
    """`case` without the pairs that the capture itself gave a size reader: aot_autograd under dynamic=True, after a
    reshape that regroups the batch, reads the regrouped size back with `sym_size.int(view, 1)` from the product's view,
    and from every later Linear's view (measured on torch 2.13). That reader is a second reader like any other (the
    lesson), so the pair is not safe, whatever the design says. Only such size readers, in the graph as captured."""
    dropped = []
    for node in gm.graph.nodes:
        if kind(gm, node) != "gelu" or not node.args or not isinstance(node.args[0], torch.fx.Node):
            continue
        chain, source = [node], node.args[0]
        if source.op == "call_function" and source.target in RESHAPES and isinstance(source.args[0], torch.fx.Node):
            chain, source = [source, node], source.args[0]
        if kind(gm, source) != "linear":
            continue
        values = [source, *chain[:-1]]
        extra = [u for value, reader in zip(values, chain) for u in value.users if u is not reader]
        if extra and all(u.op == "call_function" and u.target == aten.sym_size.int for u in extra):
            dropped.append(str(approximate_of(node)))
    if not dropped:
        return case
    fused = list(case.fused)
    for approximate in dropped:
        if approximate in fused:
            fused.remove(approximate)
    return dataclasses.replace(case, fused=tuple(fused))


def verify(ctx, case: Case, method: str, *, brief: bool = False, dynamic: bool = False) -> torch.fx.GraphModule:
    """Capture `case` with `method`, run the attempt's pass on the graph in place, check structure and numerics.

    Returns the rewritten graph module. `brief=True` leaves the lesson notes and graph listings out of failure
    messages, so that a fuzz check's counterexample (printed after the message) stays on screen. `dynamic=True`
    captures with a symbolic batch (export with a Dim, Dynamo and aot_autograd with dynamic=True).
    """
    model, inputs = case.model(), case.inputs()
    with torch.no_grad():
        eager = model(*inputs)
    captured = programs.capture_any(model, inputs, method, dynamic=dynamic)
    gm = captured.gm
    inputs2 = second_size_inputs(inputs, method) if dynamic else None
    case = without_pairs_the_capture_guards(case, gm)
    if case.edit is not None:  # the graph as edited by hand computes what it computes before any pass
        case.edit(gm)
        eager = captured.run(*inputs)
    eager2 = None
    if inputs2 is not None:
        try:
            eager2 = captured.run(*inputs2) if case.edit is not None else model(*inputs2)
            if case.edit is None:
                captured.run(*inputs2)  # the capture runs at this size without capturing again
        except CaptureError:
            eager2 = None  # the capture specialized the batch (a guard): no second size to run
            # Dynamo captured a second graph for the second size (a batch equal to a feature size shares its
            # symbol), and a capture that did refuses every later run: the pass gets a fresh one
            captured = programs.capture_any(model, inputs, method, dynamic=dynamic)
            gm = captured.gm
            if case.edit is not None:
                case.edit(gm)
    form = form_of(gm, method)
    meta_key = meta_key_of(gm)
    placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    sizes = frozenset(n.name for n in gm.graph.nodes if is_size_arithmetic(n))
    before = Census.of(gm)
    before_pairs = pairs_in(gm)
    before_text = format_graph(gm)
    before_names = {n.name: n.op for n in gm.graph.nodes}
    removable = left_dead_by_the_capture(gm)
    operands_read = tensor_placeholders_read(gm)
    assert len(before.linears) == case.linears and len(before.gelus) == case.gelus and not before.fused, \
        f"internal: the {method} graph of {case.title} is not what the check expects:\n{before_text}"

    def graph(label: str, text: str) -> str:
        return "" if brief else f"\nThe graph {label} your pass:\n{text}"

    def note(text: str) -> str:
        return "" if brief else f"\n{text}"

    shown = programs.LEAF_TRACER_TEXT if method == LEAF_TRACER else method
    where = f"on the {shown}{' (symbolic batch)' if dynamic else ''} graph of {case.title}"
    try:
        returned = ctx.attempt.fuse_linear_gelu(gm)
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - say which graph broke the attempt, and where
        text = str(exc).strip()
        bias_note = BIAS_FALSE_NOTE if ".bias'" in text and type(exc).__name__ == "GraphRebuildError" else ""
        raise CheckFailed(f"fuse_linear_gelu {where} raised {type(exc).__name__}{_attempt_location(ctx, exc)}: "
                          f"{text[:300]}" + bias_note + graph("given to", before_text)) from exc
    try:
        gm.graph.lint()
    except Exception as exc:  # noqa: BLE001 - any lint failure is the attempt's
        raise CheckFailed(f"After fuse_linear_gelu {where}, gm.graph.lint() fails: {exc}\nA rewrite must leave "
                          f"a well-formed graph: every node defined before it is used, no erased node still read."
                          + graph("before", before_text)) from None
    missing = [n for n in gm.graph.nodes if n.op == "call_module" and submodule(gm, n) is None]
    expect(not missing,
           f"After fuse_linear_gelu {where}, node {missing[0].name if missing else ''} calls submodule "
           f"{missing[0].target if missing else ''!r}, which is no longer in gm. One nn.Linear can be called by "
           f"several call_module nodes: keep the module when you fuse one of its calls (the fused node reads its "
           f"parameters through get_attr)." + graph("before", before_text))
    after = Census.of(gm, sizes)
    after_text = format_graph(gm)
    expected = len(case.fused)

    new_dead = [name for name in after.dead if name not in before.dead]
    lost = [n for n in new_dead if before_names.get(n) == "get_attr"]
    lost = sorted(set(lost) | (operands_read - {n.name for n in gm.graph.nodes if n.op == "placeholder" and n.users}))
    now_placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    expect(now_placeholders == placeholders,
           f"After fuse_linear_gelu {where}, the graph's placeholders are {now_placeholders}; they were "
           f"{placeholders}. Placeholders are the graph's inputs, its calling convention: the caller passes every one "
           f"(Dynamo and aot_autograd pass sizes as placeholders too, read or not). Never delete one, even one nothing "
           f"reads: a cleanup erases call_function and get_attr nodes only." + graph("after", after_text))
    expect(not lost,
           f"fuse_linear_gelu {where} lost operand(s): {', '.join(lost)} (a parameter or input the graph read before "
           f"your pass) is read by nothing now. Do not erase it: the fused node must take every operand of the "
           f"Linear it replaces, x, the weight and the bias, however the Linear names it (positionally, as a bias= "
           f"or weight= keyword, an explicit None)." + graph("after", after_text))
    dead_sizes = [n for n in new_dead if n in sizes]
    expect(not dead_sizes,
           f"fuse_linear_gelu {where} left size arithmetic nobody reads: {', '.join(dead_sizes)}. With a symbolic batch "
           f"the view sandwich's sizes are computed in the graph (sym_size.int, operator.mul, or sizes passed in as "
           f"placeholders by aot_autograd); if you drop the views, drop the size arithmetic that only they read."
           + graph("after", after_text))
    expect(not new_dead,
           f"fuse_linear_gelu {where} left node(s) nobody reads: {', '.join(new_dead)}. The rewrite made them dead "
           f"(old Linear, GELU, weight transpose, ...): erase them with gm.graph.erase_node(node) or "
           f"gm.graph.eliminate_dead_code()." + graph("after", after_text))
    expect(not after.packets,
           f"fuse_linear_gelu {where} made nodes that call torch.ops.kata.linear_gelu, the overload packet; "
           f"the contract's target is the overload torch.ops.kata.linear_gelu.default.")
    for node in after.fused:
        constants = [a for a in (*node.args, *node.kwargs.values()) if isinstance(a, torch.Tensor)]
        expect(not constants,
               f"fuse_linear_gelu {where} made fused node {node.name} with a tensor object as an argument. Node "
               f"arguments must be graph values (other nodes): read a module's parameter with a get_attr node, "
               f"gm.graph.get_attr('fc0.weight'), so the generated code can refer to it." + graph("after", after_text))
    names_after = {n.name for n in gm.graph.nodes}
    if len(after.fused) < expected:
        left = [str(p) for p in before_pairs if not p.unsafe and p.gelu in names_after]
        lost = ""
        if type(returned) is int and returned > len(after.fused):
            lost = (f" Your pass returned {returned} yet the graph holds {len(after.fused)} fused node(s): a rewrite "
                    f"was undone or lost. In a chain gelu(fc1(gelu(fc0(x)))) the second Linear's x BECOMES the first "
                    f"fused node once the first pair is rewritten: read a match's x at rewrite time, not when you "
                    f"collected the matches.")
        guard = (" If your pass does match this form and still refused the pair, look at the guard: it is on the "
                 "Linear's output (and, in decomposed graphs, its view) only; the Linear's input x and the GELU's "
                 "output may have any number of readers." if left and not lost and not case.note and not brief else "")
        raise CheckFailed(
            f"fuse_linear_gelu {where} made {len(after.fused)} kata.linear_gelu node(s) (returned {returned!r}); "
            f"the model has {expected} safe Linear -> GELU pair(s)"
            + (f", still unfused: {', '.join(left)}" if left else "") + "." + lost + note(case.note or FORM_NOTES[form])
            + guard + graph("before", before_text))
    unsafe_fused = [str(p) for p in before_pairs if p.unsafe and p.gelu not in names_after]
    expect(len(after.fused) == expected,
           f"fuse_linear_gelu {where} made {len(after.fused)} kata.linear_gelu node(s); only {expected} pair(s) "
           f"are safe to fuse"
           + (f". Replaced although not safe: {'; '.join(unsafe_fused)}" if unsafe_fused else "") + "."
           + note(case.note or SINGLE_USER_NOTE) + graph("after", after_text))
    computed = len(after.linears) + len(after.fused)
    expect(computed == case.linears,
           f"After fuse_linear_gelu {where}, the graph computes {computed} linear layers ({len(after.linears)} "
           f"unfused + {len(after.fused)} fused); the model has {case.linears}. A fusion replaces its Linear; it "
           f"must never add a second copy of one." + note(SINGLE_USER_NOTE) + graph("after", after_text))
    expect(len(after.gelus) == case.gelus - expected,
           f"After fuse_linear_gelu {where}, {len(after.gelus)} GELU node(s) remain; expected "
           f"{case.gelus - expected}: the model's {case.gelus} minus the {expected} fused." + graph("after", after_text))
    got_approximate = sorted(str(approximate_of(n)) for n in after.fused)
    expect(got_approximate == list(case.fused),
           f"After fuse_linear_gelu {where}, the fused nodes carry approximate={got_approximate}; the GELUs they "
           f"replaced had {list(case.fused)}. Carry each GELU's approximate (nn.GELU's .approximate attribute, "
           f"the gelu node's approximate= keyword, 'none' when absent): 'tanh' computes other numbers."
           + graph("after", after_text))
    expect(type(returned) is int and returned == expected,
           f"fuse_linear_gelu {where} returned {returned!r} after making {len(after.fused)} fused node(s); it must "
           f"return the number of pairs it fused, an int.")
    kept = after.others - before.others  # ops the pass added
    gone = before.others - after.others  # ops the pass removed: only what the capture had left dead may go
    in_place_gone = [k for k in (gone - removable) if str(k).rstrip("'\"").endswith("_")]
    expect(not kept and not (gone - removable),
           f"fuse_linear_gelu {where} changed nodes outside the pairs it fused: other ops before "
           f"{dict(before.others)}, after {dict(after.others)}. A pass may delete only the nodes of the pairs it "
           f"fuses and what only they read (the weight's transpose, the views, their size arithmetic), and nodes "
           f"the capture already left without users and that have no side effects; every other node stays."
           + (f"\n{INPLACE_NOTE}" if in_place_gone else "") + graph("after", after_text))

    check_recorded_values(gm, meta_key, case.dtype, where, graph("after", after_text))

    LINEAR_GELU_CALLS.reset()
    try:
        got = captured.run(*inputs)
    except Exception as exc:  # noqa: BLE001 - the rewritten graph itself fails to run
        raise CheckFailed(f"After fuse_linear_gelu {where}, running the rewritten graph raised {type(exc).__name__}: "
                          f"{(str(exc).strip().splitlines() or [''])[0][:300]}" + graph("after", after_text)) from exc
    expect(LINEAR_GELU_CALLS.count == expected,
           f"After fuse_linear_gelu {where}, gm.graph has {expected} kata.linear_gelu node(s), but running gm called "
           f"the fused kernel {LINEAR_GELU_CALLS.count} time(s). Calling gm runs Python code generated from "
           f"gm.graph: after editing the graph call gm.recompile(), or gm keeps running the old code.")
    try:
        torch.testing.assert_close(got, eager)
    except AssertionError as exc:
        raise CheckFailed(f"After fuse_linear_gelu {where}, running the graph no longer matches eager:\n{exc}"
                          + graph("after", after_text)) from None
    if eager2 is not None:  # a symbolic batch: the rewritten graph must hold at every batch size, not the example's
        shapes = ", ".join(str(tuple(t.shape)) for t in inputs2)
        try:
            got2 = captured.run(*inputs2)
        except Exception as exc:  # noqa: BLE001 - the rewritten graph fails at another batch size
            raise CheckFailed(f"After fuse_linear_gelu {where}, running the graph on input(s) of shape {shapes} (another "
                              f"batch size; it ran at the example's) raised {type(exc).__name__}: "
                              f"{(str(exc).strip().splitlines() or [''])[0][:300]}\nA symbolic batch means the graph "
                              f"must hold for every batch size: a proof about sizes must hold for every value of the "
                              f"symbols (statically_known_true(a == b)), not for the example's (bool(a == b))."
                              + graph("after", after_text)) from exc
        try:
            torch.testing.assert_close(got2, eager2)
        except AssertionError as exc:
            raise CheckFailed(f"After fuse_linear_gelu {where}, running the graph on input(s) of shape {shapes} (another "
                              f"batch size) no longer matches eager, though it did at the example's size:\n{exc}\nA "
                              f"proof about symbolic sizes must hold for every value of the symbols "
                              f"(statically_known_true(a == b)), not for the example's (bool(a == b))."
                              + graph("after", after_text)) from None
    return gm


def verify_each(ctx, cases, methods) -> None:
    for case in cases:
        for method in methods:
            verify(ctx, case, method)


# fuzz: random MLPs. Repeated entries weight the draw toward GELUs and single-use outputs, so most examples hold
# safe pairs; draws shrink toward the first entries (a plain GELU, no reuse).
FUZZ_ACTIVATIONS = ("gelu", "gelu_tanh", "relu", "gelu", "gelu_tanh", "sigmoid", "gelu", "tanh", "gelu_tanh",
                    "silu", "gelu", "none")
FUZZ_REUSES = ("none", "residual", "return", "none")


def fuzz_specs(styles=("modules",)):
    return mlp_specs(activations=FUZZ_ACTIVATIONS, reuses=FUZZ_REUSES, max_layers=4,
                     batch_shapes=((3,), (2, 3)), dtypes=("float32", "float64"), styles=styles)


def fuzz_captures(ctx, strategy, max_examples=None) -> None:
    """Fuzz (spec, capture method) pairs; a failure prints the shrunk MLP and the capture."""
    def prop(example):
        spec, method = example
        verify(ctx, case_from_spec(spec), method, brief=True)

    fuzz(ctx, strategy, prop, max_examples=max_examples,
         describe=lambda ex: f"{describe(ex[0])}\ncaptured with: {ex[1]}")


# --- stage: module -----------------------------------------------------------------------------------------

@CHECKS.check(stage="module", weight=3)
def module_graphs_fuse(ctx):
    "MODULE graphs: call_module Linear -> call_module GELU pairs fuse"
    verify_each(ctx, [TWO_PAIRS_2D, TWO_PAIRS_3D], ["symbolic_trace"])


@CHECKS.check(stage="module", weight=2)
def module_linear_then_functional_gelu(ctx):
    "MODULE graphs: Linear module -> F.gelu, modules nested in nn.Sequential, module and F.linear Linears in one graph"
    verify(ctx, LINEAR_THEN_F_GELU, "symbolic_trace")
    verify(ctx, MIXED_FORMS, "symbolic_trace")
    verify(ctx, MIXED_FORMS, LEAF_TRACER)  # KeepsLinear stays a call_module node; F.linear beside it


@CHECKS.check(stage="module", weight=1)
def module_fused_node_reads_the_linear_parameters(ctx):
    "MODULE graphs: the fused node reads the Linear's own parameters via get_attr"
    gm = verify(ctx, LINEAR_THEN_F_GELU, "symbolic_trace")
    for node in (n for n in gm.graph.nodes if n.op == "call_function" and n.target == FUSED):
        linear = gm.get_submodule("fc") if str(approximate_of(node)) == "tanh" else gm.get_submodule("block.0")
        for index, name in ((1, "weight"), (2, "bias")):
            value = node.args[index] if len(node.args) > index else node.kwargs.get(name)
            param = getattr(linear, name)
            if param is None:
                expect(value is None, f"fused node {node.name} replaces a Linear without bias but takes "
                                      f"bias={value!r}; pass None.")
                continue
            read = None
            if isinstance(value, torch.fx.Node) and value.op == "get_attr" and isinstance(value.target, str):
                read = gm
                for part in value.target.split("."):
                    read = getattr(read, part, None)
            expect(read is param,
                   f"fused node {node.name} takes {name}={value!r}. In a MODULE graph the Linear's parameters are "
                   f"not graph values yet: add a get_attr node reading the parameter itself "
                   f"(gm.graph.get_attr(f'{{node.target}}.{name}') -> e.g. 'fc.{name}'), not a copy, so the graph "
                   f"keeps following the module's parameters.")


@CHECKS.check(stage="module", weight=3)
def random_mlps_as_module_graphs(ctx):
    "random MLPs as MODULE graphs (symbolic_trace)"
    fuzz_captures(ctx, st.tuples(fuzz_specs(), st.just("symbolic_trace")))


# --- stage: torch ------------------------------------------------------------------------------------------

@CHECKS.check(stage="torch", weight=3)
def dynamo_graphs_fuse(ctx):
    "TORCH graphs from Dynamo: torch._C._nn.linear -> gelu pairs fuse"
    verify_each(ctx, [TWO_PAIRS_2D, TWO_PAIRS_3D, LINEAR_THEN_F_GELU], ["dynamo"])


@CHECKS.check(stage="torch", weight=2)
def functional_symbolic_trace_fuses(ctx):
    "TORCH graphs from symbolic_trace of F.linear/F.gelu code, every bias form"
    verify_each(ctx, [FUNCTIONAL_CALLS, FUNCTIONAL_PAIRS], ["symbolic_trace"])


@CHECKS.check(stage="torch", weight=3)
def random_mlps_as_torch_graphs(ctx):
    "random MLPs as TORCH graphs (Dynamo; symbolic_trace of functional code)"
    strategy = fuzz_specs(styles=("functional", "modules")).flatmap(lambda spec: st.tuples(
        st.just(spec), st.sampled_from(("symbolic_trace", "dynamo") if spec.style == "functional" else ("dynamo",))))
    fuzz_captures(ctx, strategy, max_examples=min(ctx.max_examples, 20))


# --- stage: aten ---------------------------------------------------------------------------------------------

@CHECKS.check(stage="aten", weight=3)
def export_graphs_fuse(ctx):
    "ATEN graphs from torch.export: aten.linear -> aten.gelu pairs fuse"
    verify_each(ctx, [TWO_PAIRS_2D, TWO_PAIRS_3D, FUNCTIONAL_CALLS], ["export"])


@CHECKS.check(stage="aten", weight=2)
def pre_dispatch_graphs_fuse(ctx):
    "ATEN graphs from make_fx(pre_dispatch=True) fuse"
    verify_each(ctx, [TWO_PAIRS_2D, FUNCTIONAL_CALLS], ["make_fx_pre_dispatch"])


@CHECKS.check(stage="aten", weight=3)
def random_mlps_as_aten_graphs(ctx):
    "random MLPs as ATEN graphs (make_fx pre-dispatch, torch.export)"
    fuzz_captures(ctx, st.tuples(fuzz_specs(), st.sampled_from(("make_fx_pre_dispatch", "export"))))


# --- stage: decomposed ----------------------------------------------------------------------------------------

@CHECKS.check(stage="decomposed", weight=3)
def addmm_and_mm_fuse(ctx):
    "decomposed graphs: addmm(b, x, t(w)) and mm(x, t(w)) -> gelu fuse, t(w) spelled aten.t, permute [1, 0] or [-1, -2]"
    verify_each(ctx, [TWO_PAIRS_2D], ["make_fx", "aot_autograd", "export_core"])
    verify_each(ctx, [TRANSPOSE_SPELLINGS], ["make_fx", "aot_autograd", "export_core"] if ctx.deep else ["make_fx"])


@CHECKS.check(stage="decomposed", weight=3)
def view_sandwich_fuses(ctx):
    "3-D and 4-D inputs: the view -> addmm/mm -> view -> gelu sandwich fuses"
    verify_each(ctx, [TWO_PAIRS_3D, NO_BIAS_3D], ["make_fx"])  # bias: view/addmm/view; none: view/mm/_unsafe_view
    verify(ctx, TWO_PAIRS_3D, "export_core")
    verify(ctx, TWO_PAIRS_4D, "aot_autograd")


@CHECKS.check(stage="decomposed", weight=2)
def symbolic_batch_view_sandwich_fuses(ctx):
    "a symbolic batch (export with a Dim, Dynamo and aot_autograd dynamic=True): the sandwich fuses, no size arithmetic left dead, size nodes another view reads kept, every placeholder kept, the graph holds at another batch size"
    # sym_size.int(x, 0) and operator.mul feed the views, and two Linears on one input share them: a pass that drops
    # one pair's views keeps them for the other's, and drops them once both pairs are fused
    verify(ctx, SHARED_INPUT_3D, "export_core", dynamic=True)
    verify(ctx, SHARED_INPUT_MIXED_3D, "export_core", dynamic=True)  # b's views read them to the end
    # Dynamo passes the sizes in as placeholders nothing reads (s77, s27): the graph runs only if they stay
    verify(ctx, ONE_PAIR_3D, "dynamo", dynamic=True)
    # aot_autograd passes them in as placeholders only the views' size arithmetic reads: a pass that drops the views
    # leaves them unread, and a clean-up that follows the dropped nodes to their inputs must stop at them
    verify(ctx, ONE_PAIR_3D, "aot_autograd", dynamic=True)
    if ctx.deep:
        verify(ctx, ONE_PAIR_3D, "export_core", dynamic=True)
        for case in (SHARED_INPUT_3D, SHARED_INPUT_MIXED_3D):
            verify(ctx, case, "aot_autograd", dynamic=True)
            verify(ctx, case, "dynamo", dynamic=True)  # aot_autograd passes the sizes in as placeholders and multiplies them: no sym_size there
        verify(ctx, TWO_PAIRS_4D, "aot_autograd", dynamic=True)
        verify(ctx, TWO_PAIRS_3D, "export_core", dynamic=True)
        verify(ctx, RESIDUAL_3D, "export_core", dynamic=True)
        verify(ctx, TWO_PAIRS_3D, "dynamo", dynamic=True)


@CHECKS.check(stage="decomposed", weight=2)
def reshape_that_regroups_or_no_input_view_keeps_its_shape(ctx):
    "a product whose reshape regroups the batch, changes the feature size or has no input view keeps its output's shape"
    verify(ctx, RESHAPED_PRODUCTS, "make_fx")
    # batch 3 == dim 1's 3 at the example: the regrouping view looks like the identity unless the batch is symbolic
    verify(ctx, RESHAPED_SQUARE, "export_core", dynamic=True)
    if ctx.deep:
        verify(ctx, RESHAPED_PRODUCTS, "aot_autograd")
        verify(ctx, RESHAPED_PRODUCTS, "export_core")
        verify(ctx, RESHAPED_PRODUCTS, "export_core", dynamic=True)
        verify(ctx, RESHAPED_PRODUCTS, "aot_autograd", dynamic=True)


@CHECKS.check(stage="decomposed", weight=2)
def reshaped_product_with_two_users_is_not_fused(ctx):
    "decomposed graphs: a view of the product read twice blocks the fusion"
    verify_each(ctx, [RESIDUAL_3D, RETURNED_3D], ["make_fx"])
    verify(ctx, RESIDUAL_3D, "export_core")


@CHECKS.check(stage="decomposed", weight=1)
def matrix_product_without_transposed_weight_is_not_a_linear(ctx):
    "decomposed graphs: a product that is not x @ w.T + b (mm(x, w), an identity permute or transpose, a scaled addmm) is no Linear"
    verify_each(ctx, [GELU_OF_MATMUL, SCALED_ADDMM], ["make_fx", "export_core"] if ctx.deep else ["make_fx"])


@CHECKS.check(stage="decomposed", weight=3)
def random_mlps_as_decomposed_graphs(ctx):
    "random MLPs as decomposed graphs (make_fx, aot_autograd, export_core)"
    # make_fx first and twice: it is the cheapest capture of this form and the one counterexamples shrink to
    strategy = st.tuples(fuzz_specs(), st.sampled_from(("make_fx", "export_core", "make_fx", "aot_autograd")))
    fuzz_captures(ctx, strategy, max_examples=min(ctx.max_examples, 20))


# --- stage: safety -------------------------------------------------------------------------------------------

@CHECKS.check(stage="safety", weight=4)
def linear_output_with_two_users_is_not_fused(ctx):
    "a Linear output also read by a residual add, returned, read before the GELU, by a second GELU, by an unread in-place op or by a sym_size.int is not fused"
    verify_each(ctx, [TWO_READERS], EVERY_CAPTURE)
    verify_each(ctx, [GATE_BEFORE_GELU], ONE_PER_FORM)
    verify_each(ctx, [TWO_GELUS], ONE_PER_FORM if ctx.deep else ["symbolic_trace", "make_fx"])
    # an in-place op on z that nobody reads: symbolic_trace and Dynamo keep it so (a call_method add_ reading z); the
    # aten captures thread it (the GELU reads the add_), so there it is added by hand, on the product and on its view
    verify_each(ctx, [INPLACE_ON_OUTPUT], ["symbolic_trace", "dynamo"] if ctx.deep else ["symbolic_trace"])
    verify_each(ctx, [INPLACE_ON_PRODUCT_3D, INPLACE_ON_VIEW_3D],
                ["make_fx", "export", "aot_autograd", "export_core"] if ctx.deep else ["make_fx"])
    verify_each(ctx, [SIZE_READER_3D], ("make_fx", *ONE_PER_FORM[:-1], "export_core") if ctx.deep else ["make_fx"])
    verify_each(ctx, [SIZE_READER_2D], EVERY_CAPTURE if ctx.deep else ONE_PER_FORM)


@CHECKS.check(stage="safety", weight=1)
def gelu_read_twice_still_fuses(ctx):
    "a GELU whose own output is read twice still fuses"
    verify_each(ctx, [GELU_READ_TWICE], ONE_PER_FORM)


@CHECKS.check(stage="safety", weight=2)
def approximate_is_carried(ctx):
    "the fused node carries GELU's approximate='tanh'"
    verify_each(ctx, [TANH_ONLY], ONE_PER_FORM)


@CHECKS.check(stage="safety", weight=2)
def linear_without_bias_fuses(ctx):
    "a Linear without bias fuses, with bias=None"
    verify_each(ctx, [NO_BIAS], EVERY_CAPTURE)


@CHECKS.check(stage="safety", weight=2)
def second_call_fuses_nothing(ctx):
    "idempotent: a second call returns 0 and changes nothing"
    for method in ONE_PER_FORM:
        gm = verify(ctx, TWO_PAIRS_3D, method)
        code = gm.code
        again = ctx.attempt.fuse_linear_gelu(gm)
        expect(again == 0, f"fuse_linear_gelu called a second time on the fused {method} graph of "
                           f"{TWO_PAIRS_3D.title} returned {again!r}, expected 0: a kata.linear_gelu node is not a "
                           f"Linear -> GELU pair, so nothing is left to fuse.")
        expect(gm.code == code, f"fuse_linear_gelu called a second time on the fused {method} graph changed it, "
                                f"though there was nothing to fuse.\nbefore:\n{code}\nafter:\n{gm.code}")


@CHECKS.check(stage="safety", weight=2)
def nodes_outside_matches_untouched(ctx):
    "nodes outside the pairs stay: Linear -> ReLU, GELU of another op or of the graph's input, an unread in-place op"
    verify_each(ctx, [BYSTANDERS], ONE_PER_FORM)
    verify_each(ctx, [DEAD_BYSTANDER], ["symbolic_trace", "make_fx"])
    # an unread in-place method: eliminate_dead_code() deletes it in symbolic_trace and Dynamo graphs (torch 2.13)
    verify_each(ctx, [INPLACE_BYSTANDER], ["symbolic_trace", "dynamo"])


@CHECKS.check(stage="safety", weight=1)
def unrelated_nodes_between_linear_and_gelu(ctx):
    "unrelated nodes between a Linear (its product, its view) and its GELU: the match follows data edges, not node order"
    verify_each(ctx, [BETWEEN], ONE_PER_FORM)
    verify(ctx, BETWEEN_PRODUCT, "make_fx")  # a hand-written x @ w.t() is a Linear in decomposed graphs only


@CHECKS.check(stage="safety", weight=1)
def dead_nodes_are_removed(ctx):
    "nodes the rewrite leaves unused are erased (Linear, GELU, transpose)"
    verify_each(ctx, [TWO_PAIRS_3D], ONE_PER_FORM)


@CHECKS.check(stage="safety", weight=2)
def shared_linear_module_keeps_working(ctx):
    "a Linear called three times: two calls fuse, the third still runs"
    verify_each(ctx, [SHARED_LINEAR], ONE_PER_FORM)


@CHECKS.check(stage="safety", weight=2)
def linear_subclass_fuses_only_with_linear_forward(ctx):
    "an nn.Linear subclass fuses only if it keeps nn.Linear.forward (torch.ao.nn.qat.Linear does not)"
    verify(ctx, LINEAR_SUBCLASSES, "symbolic_trace")


@CHECKS.check(stage="safety", weight=2)
def gelu_subclass_fuses_only_with_gelu_forward(ctx):
    "nn.Linear / nn.GELU subclasses kept whole by a custom Tracer, at depth 1 and 2, fuse only if they keep their base's forward"
    verify(ctx, USER_SUBCLASSES, LEAF_TRACER)
    verify(ctx, DEEP_SUBCLASSES, LEAF_TRACER)
    if ctx.deep:
        verify_each(ctx, [USER_SUBCLASSES], ["symbolic_trace", "make_fx"])


@CHECKS.check(stage="safety", weight=1)
def no_state_between_calls(ctx):
    "one pass, several graphs in turn: the same names (fc0, act1, mm) mean other modules and ops in each, in either order"
    plain, other, product, untransposed = _same_names_cases()
    # each name with one meaning, then with the other, in both orders: a cache of the first answer fails the second
    # graph (and one filled by earlier checks fails one of the two, whichever answer it holds)
    for cases, method in (((plain, other), LEAF_TRACER), ((untransposed, product), "make_fx")):
        for case in cases:
            verify(ctx, case, method)


def program_case(program) -> Case:
    linears, gelus, fused = programs.expected_counts(program)
    edit = ((lambda gm: programs.add_size_readers(gm, program))
            if any(pair.reader == "size" for pair in program.pairs) else None)
    return Case(programs.program_text(program), lambda: programs.build_program(program), program.input_shape,
                linears, gelus, fused, program.torch_dtype, edit=edit)


@CHECKS.check(stage="safety", weight=3)
def random_pair_programs(ctx):
    "random chains of pairs: every Linear/GELU form, other readers, rank 2..4, reshapes, static or symbolic batch"
    def prop(example):
        program, method, dynamic = example
        verify(ctx, program_case(program), method, brief=True, dynamic=dynamic)

    # the learner profile draws the cheap captures with a static batch only (export, aot_autograd and a symbolic
    # batch cost 2-4 times as much; the checks above have them); the deep profile draws every capture, both ways
    fuzz(ctx, programs.program_captures(dynamic=ctx.deep, cheap=not ctx.deep), prop,
         max_examples=40 if ctx.deep else 6,
         describe=lambda ex: f"{programs.program_text(ex[0])}\ncaptured with: "
                             f"{programs.LEAF_TRACER_TEXT if ex[1] == LEAF_TRACER else ex[1]}"
                             f"{', symbolic batch' if ex[2] else ''}")


def recorded_value(node: object) -> object:
    """The value a capture recorded for a node: meta "val" (make_fx, export, aot_autograd) or Dynamo's
    "example_value"; None for anything else (a constant argument, symbolic_trace graphs)."""
    if not isinstance(node, torch.fx.Node):
        return None
    return node.meta.get("val", node.meta.get("example_value"))


@CHECKS.check(stage="safety", weight=1)
def fused_nodes_record_their_value(ctx):
    "each fused node records its value under the capture's meta key (Dynamo: example_value), its shape and dtype"
    # verify() reads every fused node's recorded value in every graph that records values; here the dtypes and keys
    # where a made-up value goes wrong: float64 and float16 (a new fake tensor is float32), Dynamo's example_value
    for method in ("dynamo", "make_fx", "export") if ctx.deep else ("dynamo", "make_fx"):
        verify(ctx, in_dtype(TWO_PAIRS_3D, torch.float64), method)
    verify(ctx, in_dtype(ONE_PAIR_3D, torch.float16), "make_fx")

    def prop(example):
        program, method, dynamic = example
        verify(ctx, program_case(program), method, brief=True, dynamic=dynamic)

    if ctx.deep:  # the learner profile reads the recorded values of every graph the other checks fuse
        fuzz(ctx, programs.recording_captures(), prop, max_examples=20,
             describe=lambda ex: f"{programs.program_text(ex[0])}\ncaptured with: {ex[1]}")


# --- the report: unfused_pairs ------------------------------------------------------------------------------
# Each case states, from the model's design, the reason of each of its GELUs in the order the model computes them
# (the order of every capture's graph); the checks find those GELU nodes themselves and compare name and reason.

REASONS = ("safe", "other_readers", "not_a_linear", "written_out")
REPORT_NOTE = ("unfused_pairs reports every GELU left in the graph, in graph order, as (node name, reason): a GELU node "
               "in any dialect, or the tanh formula written out (at its last multiply). README.md, 'What the pass "
               "leaves, and why'.")


def gelu_new(x):
    """GPT-2's GELU, written out as transformers writes it (Python operators, torch.tanh, torch.pow)."""
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * torch.pow(x, 3.0))))


def _inner(x):
    return 0.7978845608028654 * (x + 0.044715 * x * x * x)


WRITTEN_OUT_SPELLINGS = {
    # each: the written-out GELU in another spelling or operand order; all are "written_out"
    "operators, x * 0.5 and tanh(u) + 1": lambda x: x * 0.5 * (torch.tanh(_inner(x)) + 1.0),
    "operators, the outer multiply reversed": lambda x: (1 + torch.tanh(_inner(x))) * (0.5 * x),
    "torch.mul / torch.add": lambda x: torch.mul(torch.mul(x, 0.5), torch.add(torch.tanh(_inner(x)), 1)),
    "Tensor methods": lambda x: x.mul(0.5).mul(_inner(x).tanh().add(1.0)),
}


class Conv1D(nn.Module):
    """GPT-2's Conv1D: `addmm(b, x.view(-1, in), w)` with an [in, out] weight -- no transposed weight, no Linear."""

    def __init__(self, nf: int, nx: int) -> None:
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.3)
        self.bias = nn.Parameter(torch.randn(nf) * 0.1)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(size_out)


class GPT2LikeMLPs(nn.Module):
    """Two GPT-2 MLP blocks: Conv1D -> gelu_new -> Conv1D, a residual around each."""

    def __init__(self) -> None:
        super().__init__()
        self.c_fc0, self.c_proj0, self.c_fc1, self.c_proj1 = Conv1D(8, 4), Conv1D(4, 8), Conv1D(8, 4), Conv1D(4, 8)

    def forward(self, x):
        x = x + self.c_proj0(gelu_new(self.c_fc0(x)))
        return x + self.c_proj1(gelu_new(self.c_fc1(x)))


class WrittenOutSpelling(nn.Module):
    def __init__(self, spelling: str) -> None:
        super().__init__()
        self.spelling, self.fc = spelling, nn.Linear(4, 6)

    def forward(self, x):
        return WRITTEN_OUT_SPELLINGS[self.spelling](self.fc(x))


class NearMisses(nn.Module):
    """Formulas that look like the written-out GELU and are not (another number, another function, one half alone),
    then one that is: only the last is reported."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        z = self.fc(x)
        u = _inner(z)
        near = [0.7 * z * (1 + torch.tanh(u)), 0.3 * z * (1 + torch.tanh(u)),  # not a half
                0.5 * z * (2 + torch.tanh(u)), 0.5 * z * (torch.tanh(u) + 0),  # not one plus
                0.5 * z * (1 + torch.sigmoid(u)),  # not a tanh
                z * (1 + torch.tanh(u)), (z * z) * (1 + torch.tanh(u)), 0.5 * z * torch.tanh(u),  # one half alone
                (1 + torch.tanh(u)) * z, torch.tanh(u) * (0.5 * z)]  # one half alone, the factors swapped
        return sum(near) + z * 0.5 * (torch.tanh(u) + 1)


class WrittenOutReads(nn.Module):
    """The written-out GELU whatever it reads: its tanh of another Linear's output, of the graph's input, and a
    formula whose x is the graph's input while its tanh reads the Linear. Each is written_out."""

    def __init__(self) -> None:
        super().__init__()
        self.fc, self.other = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        z, y = self.fc(x), self.other(x)
        return (0.5 * z * (1 + torch.tanh(y)) + 0.5 * z * (1 + torch.tanh(x))
                + 0.5 * x * (1 + torch.tanh(_inner(z))))


class EveryReason(nn.Module):
    """One GELU of each reason a GELU node can have, in this order: other_readers (fc0's output is also added),
    safe (fc1 -> GELU(tanh)), not_a_linear (a GELU of a ReLU), not_a_linear (a GELU of Conv1D), not_a_linear (a
    GELU of the graph's input), other_readers twice (two GELUs of fc2)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc0, self.fc1, self.conv, self.fc2 = nn.Linear(4, 4), nn.Linear(4, 4), Conv1D(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        z = self.fc0(x)
        h = F.gelu(z) + z
        h = F.gelu(self.fc1(h), approximate="tanh")
        h = F.gelu(torch.relu(h)) + F.gelu(self.conv(h)) + F.gelu(x)
        z2 = self.fc2(h)
        return F.gelu(z2) * F.gelu(z2, approximate="tanh")


class OverridingLinear(nn.Linear):
    """A Linear subclass that overrides forward (LoRA-like): not a Linear by the lesson's rule."""

    def forward(self, x):
        return super().forward(x) * 2.0


class SubclassThenGelu(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc, self.act = OverridingLinear(4, 4), nn.GELU()

    def forward(self, x):
        return self.act(self.fc(x))


class UnreadNodes(nn.Module):
    """Nodes that symbolic_trace keeps though nothing reads them: an in-place add on a copy of x (its effect reaches
    fc through h, not through the node) and a GELU of x whose result is dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = x.clone()
        h.add_(1.0)
        F.gelu(x)
        return F.gelu(self.fc(h))


def add_unread_gelu(gm: torch.fx.GraphModule) -> None:
    """By hand: g = aten.gelu(x) right after the graph's input, read by nothing."""
    x = next(n for n in gm.graph.nodes if n.op == "placeholder")
    with gm.graph.inserting_after(x):
        gm.graph.call_function(aten.gelu.default, (x,))
    gm.recompile()


@dataclass(frozen=True)
class ReportCase:
    title: str
    build: Callable[[], nn.Module]
    input_shape: tuple[int, ...]
    reasons: tuple[str, ...]   # of each GELU, in the order the model computes them
    captures: tuple[str, ...] = EVERY_CAPTURE
    edit: Callable[[torch.fx.GraphModule], None] | None = None  # a change made by hand to the captured graph

    def inputs(self) -> tuple[torch.Tensor]:
        return (torch.randn(*self.input_shape, generator=torch.Generator().manual_seed(3)),)

    def model(self) -> nn.Module:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            return self.build().eval()


GPT2_LIKE = ReportCase("two GPT-2 MLP blocks (Conv1D -> gelu_new -> Conv1D, residual)", GPT2LikeMLPs, (2, 3, 4),
                       ("written_out", "written_out"))
EVERY_REASON = ReportCase("z0 = fc0(x); gelu(z0) + z0; gelu_tanh(fc1(.)); gelu(relu(.)) + gelu(Conv1D(.)) + gelu(x); "
                          "gelu(z2) * gelu_tanh(z2) with z2 = fc2(.)", EveryReason, (2, 3, 4),
                          ("other_readers", "safe", "not_a_linear", "not_a_linear", "not_a_linear", "other_readers",
                           "other_readers"))
EVERY_REASON_2D = dataclasses.replace(EVERY_REASON, input_shape=(3, 4), captures=ONE_PER_FORM)
NEAR_MISSES = ReportCase("fc -> ten formulas like the written-out GELU that are not, then one that is", NearMisses,
                         (3, 4), ("written_out",), ("symbolic_trace", "dynamo", "make_fx", "export_core"))
ONE_SAFE_PAIR = ReportCase("fc -> GELU", lambda: nn.Sequential(nn.Linear(4, 4), nn.GELU()), (3, 4), ("safe",),
                           ONE_PER_FORM)
SUBCLASS_THEN_GELU = ReportCase("a Linear subclass that overrides forward -> nn.GELU", SubclassThenGelu, (3, 4),
                                ("not_a_linear",), ("symbolic_trace",))
WRITTEN_OUT_READS = ReportCase("0.5 * z * (1 + tanh(y)) + 0.5 * z * (1 + tanh(x)) + 0.5 * x * (1 + tanh(inner(z))), "
                               "z = fc(x), y = other(x)", WrittenOutReads, (3, 4), ("written_out",) * 3,
                               ("symbolic_trace", "dynamo", "make_fx", "export_core"))
UNREAD_NODES = ReportCase("h = x.clone(); h.add_(1.0), a node nothing reads; gelu(x), dropped; gelu(fc(h))",
                          UnreadNodes, (3, 4), ("not_a_linear", "safe"), ("symbolic_trace",))
UNREAD_GELU = ReportCase("fc -> GELU, with g = aten.gelu(x) added by hand to the captured graph, read by nothing",
                         lambda: nn.Sequential(nn.Linear(4, 4), nn.GELU()), (3, 4), ("not_a_linear", "safe"),
                         ("make_fx",), edit=add_unread_gelu)
SPELLING_CASES = [ReportCase(f"fc -> the written-out GELU ({spelling})", lambda s=spelling: WrittenOutSpelling(s),
                             (3, 4), ("written_out",), ("symbolic_trace", "dynamo", "make_fx"))
                  for spelling in WRITTEN_OUT_SPELLINGS]


def gelu_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The GELUs of a graph in graph order, found without any pass: GELU nodes, and the written-out formula's last
    multiply (a multiply of a multiply by 0.5 and an add of 1 and a tanh)."""
    def target(node) -> str:
        if not isinstance(node, torch.fx.Node) or node.op not in ("call_function", "call_method"):
            return ""
        return (node.target if node.op == "call_method" else getattr(node.target, "__name__", "")).split(".")[0]

    def numbers(node) -> list:
        return [a for a in node.args if not isinstance(a, torch.fx.Node)]

    def one_plus_tanh(node) -> bool:
        return target(node) == "add" and 1 in numbers(node) and any(target(a) == "tanh" for a in node.args)

    def half(node) -> bool:
        return target(node) == "mul" and 0.5 in numbers(node)

    found = []
    for node in gm.graph.nodes:
        if node.op == "call_module" and isinstance(submodule(gm, node), nn.GELU):
            found.append(node)
        elif node.op == "call_function" and node.target in GELU_FUNCTIONS:
            found.append(node)
        elif target(node) == "mul" and len(node.args) == 2 and (
                (half(node.args[0]) and one_plus_tanh(node.args[1])) or
                (half(node.args[1]) and one_plus_tanh(node.args[0]))):
            found.append(node)
    return found


def expected_report(gm: torch.fx.GraphModule, case: ReportCase) -> list[tuple[str, str]]:
    nodes = gelu_nodes(gm)
    assert len(nodes) == len(case.reasons), f"{case.title}: the checks found {len(nodes)} GELUs, expected " \
                                            f"{len(case.reasons)} (a check's bug, not yours)"
    return [(node.name, reason) for node, reason in zip(nodes, case.reasons)]


def _report_of(ctx, gm: torch.fx.GraphModule, where: str) -> list[tuple[str, str]]:
    """The attempt's report, as a list of (str, str) pairs, or a failure saying what came back instead."""
    got = ctx.attempt.unfused_pairs(gm)
    try:
        pairs = [(str(name), str(reason)) for name, reason in got]
    except (TypeError, ValueError):
        raise CheckFailed(f"unfused_pairs on {where} returned {got!r}: expected a list of (node name, reason) "
                          f"pairs. {REPORT_NOTE}") from None
    expect(all(isinstance(name, str) and isinstance(reason, str) for name, reason in got),
           f"unfused_pairs on {where} returned {got!r}: each entry is (node name, reason), two strings (node.name, "
           f"not the node).")
    unknown = sorted({reason for _, reason in pairs if reason not in REASONS})
    expect(not unknown, f"unfused_pairs on {where} gave the reason(s) {unknown}: the reason is one of {REASONS}. "
                        f"{REPORT_NOTE}")
    return pairs


def _report_message(where: str, got: list, want: list, gm: torch.fx.GraphModule) -> str:
    missing = [entry for entry in want if entry not in got]
    extra = [entry for entry in got if entry not in want]
    lines = [f"unfused_pairs on {where} returned {got}, expected {want}."]
    if missing:
        lines.append(f"missing or with another reason: {missing}")
    if extra:
        lines.append(f"not expected: {extra}")
    if not missing and not extra:
        lines.append("the same entries in another order: report in graph order")
    lines.append(REPORT_NOTE)
    nodes = {node.name: node for node in gm.graph.nodes}
    for name, reason in missing[:3]:  # each GELU the report got wrong, with what it reads and who else reads that
        node = nodes[name]
        source = node.args[0] if node.args and isinstance(node.args[0], torch.fx.Node) else None
        read = (f"; it reads {source.name} = {short_target(gm, source)}, read by "
                f"{', '.join(u.name for u in source.users)}") if source is not None else ""
        lines.append(f"  {name} = {short_target(gm, node)}{read}: {reason}")
    return "\n".join(lines)


def check_report(ctx, case: ReportCase, method: str, *, fuse_with=None) -> None:
    """The attempt's report on `case` captured with `method` (after `fuse_with`'s pass, if given) is exactly the
    case's GELUs with their reasons, in graph order, and leaves the graph as it was."""
    gm = programs.capture_any(case.model(), case.inputs(), method).gm
    if case.edit is not None:
        case.edit(gm)
    if fuse_with is not None:
        fuse_with.fuse_linear_gelu(gm)
    want = expected_report(gm, case) if fuse_with is None else expected_after_fusion(gm, case)
    code, names = gm.code, [node.name for node in gm.graph.nodes]
    where = f"the {method} graph of {case.title}" + (" after the reference's pass" if fuse_with else "")
    got = _report_of(ctx, gm, where)
    removed = [name for name in names if name not in {node.name for node in gm.graph.nodes}]
    expect(not removed, f"unfused_pairs removed {', '.join(removed)} from {where}: it only reads the graph, and "
                        f"every GELU in it is reported, read or not. Deleting nodes nobody reads "
                        f"(graph.eliminate_dead_code()) changes the learner's graph, and an unread in-place op "
                        f"among them changes what it computes.")
    expect(got == want, _report_message(where, got, want, gm))
    expect(gm.code == code, f"unfused_pairs changed {where}: it only reads the graph.")


def expected_after_fusion(gm: torch.fx.GraphModule, case: ReportCase) -> list[tuple[str, str]]:
    """After a correct pass the safe pairs are fused nodes (no GELUs): every other GELU keeps its reason."""
    reasons = [reason for reason in case.reasons if reason != "safe"]
    nodes = gelu_nodes(gm)
    assert len(nodes) == len(reasons), f"{case.title}: {len(nodes)} GELUs left after the reference's pass"
    return [(node.name, reason) for node, reason in zip(nodes, reasons)]


@CHECKS.check(stage="report", weight=3)
def report_says_why_gpt2s_mlps_are_not_fused(ctx):
    "GPT-2's MLPs (Conv1D -> gelu_new): the pass fuses nothing, and the report says each GELU is written out"
    for method in GPT2_LIKE.captures:
        gm = programs.capture_any(GPT2_LIKE.model(), GPT2_LIKE.inputs(), method).gm
        code = gm.code
        fused = ctx.attempt.fuse_linear_gelu(gm)
        expect(fused == 0 and gm.code == code,
               f"fuse_linear_gelu on the {method} graph of {GPT2_LIKE.title} returned {fused!r} and "
               f"{'changed' if gm.code != code else 'kept'} the graph: Conv1D (addmm with an untransposed weight) "
               f"is no Linear and gelu_new is no GELU node, so there is no pair to fuse (README.md, 'out of scope').")
        check_report(ctx, GPT2_LIKE, method)
    if ctx.deep:  # the real model: transformers' GPT-2, tiny configuration
        from katas.common.real_models import REAL_MODELS

        entry = REAL_MODELS["gpt2"]
        for method in ("dynamo", "export"):
            gm = programs.capture_any(entry.build(), entry.inputs(0), method).gm
            got = _report_of(ctx, gm, f"the {method} graph of a tiny GPT-2")
            expect([reason for _, reason in got] == ["written_out", "written_out"],
                   f"unfused_pairs on the {method} graph of a tiny GPT-2 (2 layers) returned {got}: expected its two "
                   f"gelu_new, each written_out. {REPORT_NOTE}")


@CHECKS.check(stage="report", weight=3)
def report_gives_each_gelu_its_reason(ctx):
    "every GELU node gets its reason: safe, other_readers (a residual, a second GELU, a view's reader), not_a_linear"
    for case in (EVERY_REASON, EVERY_REASON_2D, SUBCLASS_THEN_GELU, UNREAD_NODES, UNREAD_GELU):
        for method in case.captures:
            check_report(ctx, case, method)


@CHECKS.check(stage="report", weight=2)
def report_finds_the_written_out_gelu_in_every_spelling(ctx):
    "the written-out GELU in every spelling: x * 0.5 or 0.5 * x, tanh + 1 or 1 + tanh, operators, torch.mul, methods; whatever it reads"
    for case in (*SPELLING_CASES, WRITTEN_OUT_READS):
        for method in case.captures:
            check_report(ctx, case, method)


@CHECKS.check(stage="report", weight=1)
def report_leaves_out_formulas_that_are_not_a_gelu(ctx):
    "only the GELU's formula is reported: 0.7 * x, 2 + tanh, sigmoid, or one half of it alone is no GELU"
    for method in NEAR_MISSES.captures:
        check_report(ctx, NEAR_MISSES, method)


@CHECKS.check(stage="report", weight=2)
def report_after_a_pass_leaves_out_the_fused_pairs(ctx):
    "after a correct pass: fused nodes are no GELUs, every other GELU keeps its reason; no state between graphs"
    for method in ONE_PER_FORM:
        check_report(ctx, EVERY_REASON, method, fuse_with=ctx.reference)
    # the same names mean other GELUs in each graph (`gelu` is other_readers in one, safe in the other), either order
    for method in ("make_fx", "dynamo"):
        for first, second in ((EVERY_REASON_2D, ONE_SAFE_PAIR), (ONE_SAFE_PAIR, EVERY_REASON_2D)):
            for case in (first, second):
                check_report(ctx, case, method)
