"""Kata 3's random pair programs: chains of Linear -> GELU pairs that vary every axis the lesson's rules speak of.

A program is plain data (a `PairProgram` of `PairSpec`s); `build_program` turns it into an nn.Module and
`expected_counts` reads off, from the design alone, how many Linears and GELUs it computes and which pairs are safe.
Axes (see hidden/rules.toml): input rank 2..4; the Linear's form (nn.Linear, a subclass keeping or overriding its
forward, F.linear with the bias positional / keyword / absent, a hand-written `x @ w.t()` or `x @ w.permute(-1, -2)`
whose reshapes flatten and restore, regroup the batch, have no input view, or change the feature size on the input
side); the GELU's form
(nn.GELU, a subclass keeping or overriding forward, F.gelu); approximate none/tanh; another reader of the Linear's
output before the GELU, after it, the graph's output, or a `sym_size.int` of it added to the captured graph by hand;
an unread in-place op on the Linear's output, a second GELU of it;
unrelated nodes between the Linear (or its product) and the GELU; the transpose spelled aten.t or
permute with dims counted from the start or the end; several pairs chained, each drawing its forms on its own (so one
graph mixes module and function Linears); batch sizes all different or all equal (then a regrouping reshape looks like the identity at
the example size, though it is none under a symbolic batch); and the capture, with a static or symbolic batch,
including a custom Tracer that keeps subclasses whole.
"""
from __future__ import annotations

from dataclasses import dataclass

import operator

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import strategies as st

from katas.common.capture import DYNAMIC_CAPTURES, Captured, capture
from katas.common.zoo import (InheritsScaledLinear, InheritsShiftedGELU, KeepsGELU, KeepsKeepsGELU, KeepsKeepsLinear,
                              KeepsLinear, RestoresGELU, RestoresLinear, ScaledLinear, ShiftedGELU)

LEAF_TRACER = "symbolic_trace_leaf_subclasses"
LEAF_TRACER_TEXT = "symbolic_trace with a custom fx.Tracer whose is_leaf_module keeps nn.Linear / nn.GELU subclasses whole"
DECOMPOSED_CAPTURES = ("make_fx", "aot_autograd", "export_core")
PROGRAM_CAPTURES = ("symbolic_trace", LEAF_TRACER, "dynamo", "export", "make_fx_pre_dispatch", *DECOMPOSED_CAPTURES)
# the cheapest capture of each form but Dynamo's (export and aot_autograd cost 2-4 times make_fx)
CHEAP_CAPTURES = ("symbolic_trace", LEAF_TRACER, "make_fx_pre_dispatch", "make_fx")

# rank -> the input's leading dimensions; sizes differ, so a regrouping reshape is never the identity
BATCHES = {2: (3,), 3: (2, 3), 4: (2, 3, 4)}
# rank -> leading dimensions all equal: at the example size a regrouping reshape has the input's own batch sizes, so
# only a symbolic batch tells it from a flatten-and-restore (a proof by the example's values says "identity")
SQUARE_BATCHES = {2: (3,), 3: (3, 3), 4: (3, 3, 3)}
# module forms: (the Linear's class, the GELU's class, whether the class's forward is its base's, what a
# counterexample says of it). The kind is read through the whole chain of bases: a depth-2 subclass keeps the
# base's forward through its parent, inherits an overriding parent's, or assigns the base's forward back.
MODULE_FORMS = {
    "module": (nn.Linear, nn.GELU, True, ""),
    "module_keeps": (KeepsLinear, KeepsGELU, True, "keeps {base}.forward"),
    "module_keeps_deep": (KeepsKeepsLinear, KeepsKeepsGELU, True, "keeps {base}.forward through its parent"),
    "module_overrides": (ScaledLinear, ShiftedGELU, False, "overrides forward: {what}"),
    "module_inherits_override": (InheritsScaledLinear, InheritsShiftedGELU, False,
                                 "inherits its parent's overriding forward: {what}"),
    "module_restores": (RestoresLinear, RestoresGELU, True, "forward = {base}.forward, below an overriding parent"),
}
LINEAR_FORMS = (*MODULE_FORMS, "functional", "matmul_flatten", "matmul_regroup", "matmul_no_input_view",
                "matmul_refeature")
GELU_FORMS = (*MODULE_FORMS, "functional")
# "size": an aten.sym_size.int of the Linear's output, added to the captured graph by hand (no capture makes one on
# torch 2.13), whose value multiplies the graph's first output; "inplace": z.add_(1.0) right after the Linear, whose
# result nobody reads (symbolic_trace and Dynamo keep it as an unread call_method reading z; the aten captures
# thread it: the GELU reads the add_); "gelu": a second GELU of z (F.gelu, the other approximate), added to the
# pair's GELU: two GELUs reading one Linear are no safe pair (fusing both computes the product twice)
READERS = ("none", "before", "after", "output", "size", "inplace", "gelu")
BIASES = ("positional", "keyword", "absent")
# how a hand-written product spells the weight's transpose: aten.t, or aten.permute(w, dims) in every decomposed
# capture, dims any spelling of the two dims, counted from the start or the end (w.transpose(0, 1), aten.transpose.int
# in make_fx, is one a pass may fuse or leave: not drawn)
PERMUTE_DIMS = {"permute": (-1, -2), "permute_1_0": (1, 0), "permute_1_m2": (1, -2), "permute_m1_0": (-1, 0)}
TRANSPOSES = ("t", *PERMUTE_DIMS)


class LeafSubclassTracer(torch.fx.Tracer):
    """A custom tracer that keeps every nn.Linear / nn.GELU subclass whole as one call_module node (torch.fx
    keeps only classes defined under torch.nn / torch.ao.nn by default)."""

    def is_leaf_module(self, m: nn.Module, qualname: str) -> bool:
        return isinstance(m, (nn.Linear, nn.GELU)) or super().is_leaf_module(m, qualname)


def capture_any(model: nn.Module, inputs: tuple, method: str, *, dynamic: bool = False) -> Captured:
    """`katas.common.capture`, plus LEAF_TRACER (a MODULE graph in which subclasses stay call_module nodes)."""
    if method == LEAF_TRACER:
        graph = LeafSubclassTracer().trace(model)
        graph._tracer_cls = None  # the worker that receives this graph module need not import this tracer
        gm = torch.fx.GraphModule(model, graph)
        return Captured(method, gm, lambda *args: gm(*args))
    return capture(model, inputs, method, dynamic=dynamic)


@dataclass(frozen=True)
class PairSpec:
    """One Linear -> GELU step on h; `reader` is who else reads the Linear's output z."""

    out_features: int = 3
    linear: str = "module"
    bias: str = "positional"
    gelu: str = "module"
    approximate: str = "none"
    reader: str = "none"
    transpose: str = "t"  # the matmul forms' spelling of w.T (TRANSPOSES)
    # unrelated nodes (sigmoid(h).mean(), h the pair's input) computed between the Linear and its GELU (and, for a
    # hand-written product, between the product and its reshape): the match is a data edge, not node order
    between: bool = False

    def safe(self) -> bool:
        return (self.reader == "none" and MODULE_FORMS.get(self.linear, (None, None, True))[2]
                and MODULE_FORMS.get(self.gelu, (None, None, True))[2])


@dataclass(frozen=True)
class PairProgram:
    in_features: int = 4
    rank: int = 2
    pairs: tuple[PairSpec, ...] = (PairSpec(),)
    dtype: str = "float32"
    seed: int = 0
    square: bool = False  # leading dimensions all equal (SQUARE_BATCHES)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (*(SQUARE_BATCHES if self.square else BATCHES)[self.rank], self.in_features)

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)

    def captures(self, cheap: bool = False) -> tuple[str, ...]:
        """Captures in which every pair is a Linear -> GELU pair by the lesson: a hand-written `x @ w.t()` is
        `mm(x, t(w))` (a Linear) only once decomposed. `cheap`: only those of CHEAP_CAPTURES."""
        every = DECOMPOSED_CAPTURES if any(p.linear.startswith("matmul") for p in self.pairs) else PROGRAM_CAPTURES
        if cheap:
            return tuple(c for c in CHEAP_CAPTURES if c in every)
        # weighted: the custom Tracer and the captures that keep a batch symbolic with a view sandwich come twice
        return every + tuple(c for c in (LEAF_TRACER, "export_core", "aot_autograd") if c in every)


def refeature_split(width: int) -> int:
    """How many rows a `matmul_refeature` product makes of each input row: its weight reads width // k features."""
    return 2 if width % 2 == 0 else width


def module_text(form: str, which: int, call: str) -> str:
    """A module form as a counterexample writes it: `KeepsLinear(4, 3, bias=True)(h)  # keeps nn.Linear.forward`."""
    cls, note = MODULE_FORMS[form][which], MODULE_FORMS[form][3]
    base = ("nn.Linear", "nn.GELU")[which]
    name = base if cls in (nn.Linear, nn.GELU) else cls.__name__
    what = ("0.5 * linear", "gelu(z - 0.5)")[which]
    return f"{name}{call}" + (f"  # {note.format(base=base, what=what)}" if note else "")


def expected_counts(program: PairProgram) -> tuple[int, int, tuple[str, ...]]:
    """(linears, gelus, sorted approximate of each safe pair), from the design."""
    return (len(program.pairs), len(program.pairs) + sum(p.reader == "gelu" for p in program.pairs),
            tuple(sorted(p.approximate for p in program.pairs if p.safe())))


class Program(nn.Module):
    def __init__(self, program: PairProgram):
        super().__init__()
        self.program = program
        width = program.in_features
        for i, pair in enumerate(program.pairs):
            bias = pair.bias != "absent"
            if pair.linear in MODULE_FORMS:
                setattr(self, f"fc{i}", MODULE_FORMS[pair.linear][0](width, pair.out_features, bias=bias))
            elif pair.linear == "matmul_refeature":  # reads width // k features per row: k rows per input row
                k = refeature_split(width)
                setattr(self, f"w{i}", nn.Parameter(torch.randn(pair.out_features, width // k) / (width // k) ** 0.5))
            else:
                setattr(self, f"w{i}", nn.Parameter(torch.randn(pair.out_features, width) / width ** 0.5))
                if bias and pair.linear == "functional":
                    setattr(self, f"b{i}", nn.Parameter(torch.randn(pair.out_features)))
            if pair.gelu != "functional":
                setattr(self, f"act{i}", MODULE_FORMS[pair.gelu][1](approximate=pair.approximate))
            width = pair.out_features * (refeature_split(width) if pair.linear == "matmul_refeature" else 1)

    def forward(self, x):
        h, returned = x, []
        for i, pair in enumerate(self.program.pairs):
            sides = []
            z = self._linear(i, pair, h, sides)
            if pair.reader == "inplace":  # in place, its result read by nobody: yet it changes z, which the GELU reads
                z.add_(1.0)
            if pair.between:  # between z and its GELU in every capture
                sides.append(torch.sigmoid(h).mean())
            gate = torch.sigmoid(z) if pair.reader == "before" else None
            g = getattr(self, f"act{i}")(z) if pair.gelu != "functional" else F.gelu(z, approximate=pair.approximate)
            if gate is not None:
                g = g * gate
            elif pair.reader == "after":
                g = g + z
            elif pair.reader == "output":
                returned.append(z)
            elif pair.reader == "gelu":  # a second GELU of z
                g = g + F.gelu(z, approximate="none" if pair.approximate == "tanh" else "tanh")
            for side in sides:
                g = g + side
            h = g
        return (h, *returned) if returned else h

    def _linear(self, i: int, pair: PairSpec, h, sides: list):
        if pair.linear in MODULE_FORMS:
            return getattr(self, f"fc{i}")(h)
        w = getattr(self, f"w{i}")
        w_t = w.t if pair.transpose == "t" else (lambda: w.permute(*PERMUTE_DIMS[pair.transpose]))
        if pair.linear == "functional":
            if pair.bias == "positional":
                return F.linear(h, w, getattr(self, f"b{i}"))
            if pair.bias == "keyword":
                return F.linear(h, w, bias=getattr(self, f"b{i}"))
            return F.linear(h, w)
        lead = h.shape[:-1]
        if pair.linear == "matmul_refeature":  # (*lead, W) -> (-1, W // k) @ w.T -> (*lead, k * out): the batch
            k = refeature_split(h.shape[-1])    # comes back, the feature size does not
            return (h.reshape(-1, h.shape[-1] // k) @ w_t()).reshape(*lead, k * w.shape[0])
        if h.dim() == 2:  # a matrix already: no view on either side
            return h @ w_t()
        flat = h.reshape(-1, h.shape[-1])
        if pair.linear == "matmul_no_input_view":
            flat = torch.relu(flat)  # the product reads the relu, not a view of h
        product = flat @ w_t()
        if pair.between:  # an unrelated node between the product and its reshape too (read after the GELU)
            sides.append(torch.relu(h).mean())
        if pair.linear == "matmul_regroup":  # same elements, other leading dims: (B, S, out) -> (S, B, out)
            return product.reshape(*reversed(lead[1:]), -1, w.shape[0])
        return product.reshape(*lead, w.shape[0])


def build_program(program: PairProgram) -> nn.Module:
    with torch.random.fork_rng():
        torch.manual_seed(program.seed)
        return Program(program).to(program.torch_dtype).eval()


def add_size_readers(gm: torch.fx.GraphModule, program: PairProgram) -> None:
    """For each pair whose reader is "size": add `s = aten.sym_size.int(z, 0)` reading that pair's Linear output z
    (the i-th Linear of the captured graph, in graph order), just before the output, and multiply the graph's first
    output by `s`. No capture
    makes such a reader on torch 2.13; another pass, or a graph built by hand, can."""
    graph = gm.graph
    linears = [n for n in graph.nodes if is_linear_node(gm, n)]
    assert len(linears) == len(program.pairs), f"internal: {len(linears)} Linear nodes for {len(program.pairs)} pairs"
    sizes = []
    output = next(n for n in graph.nodes if n.op == "output")
    for node, pair in zip(linears, program.pairs):
        if pair.reader == "size":
            with graph.inserting_before(output):  # last: a pass may rewire it to any node without breaking order
                sizes.append(graph.call_function(torch.ops.aten.sym_size.int, (node, 0)))
    if sizes:
        scale_first_output(gm, sizes)


def is_linear_node(gm: torch.fx.GraphModule, node: torch.fx.Node) -> bool:
    """A Linear of a pair program in any capture: a module call, F.linear / aten.linear, or the addmm / mm product."""
    if node.op == "call_module":
        return isinstance(gm.get_submodule(node.target), nn.Linear)
    return node.op == "call_function" and node.target in (
        torch._C._nn.linear, torch.ops.aten.linear.default, torch.ops.aten.addmm.default, torch.ops.aten.mm.default)


def scale_first_output(gm: torch.fx.GraphModule, factors: list) -> None:
    """Multiply the graph's first output by each of `factors` (graph values), in new nodes before the output."""
    graph = gm.graph
    output = next(n for n in graph.nodes if n.op == "output")
    result = output.args[0]
    first = result[0] if isinstance(result, (tuple, list)) else result
    with graph.inserting_before(output):
        for factor in factors:
            first = graph.call_function(operator.mul, (first, factor))
    if isinstance(result, (tuple, list)):
        output.args = (type(result)([first, *result[1:]]),)
    else:
        output.args = (first,)
    gm.recompile()


def program_text(program: PairProgram) -> str:
    """The program as code, for a counterexample."""
    lines = [f"x: {program.dtype} of shape {program.input_shape}; h = x"]
    width = program.in_features
    for i, p in enumerate(program.pairs):
        b = p.bias != "absent"
        linear = {
            **{form: module_text(form, 0, f"({width}, {p.out_features}, bias={b})(h)") for form in MODULE_FORMS},
            "functional": {"positional": f"F.linear(h, w{i}, b{i})", "keyword": f"F.linear(h, w{i}, bias=b{i})",
                           "absent": f"F.linear(h, w{i})"}[p.bias],
            "matmul_flatten": f"(h.reshape(-1, {width}) @ w{i}.t()).reshape(*h.shape[:-1], {p.out_features})",
            "matmul_regroup": f"(h.reshape(-1, {width}) @ w{i}.t()).reshape(*reversed(h.shape[1:-1]), -1, "
                              f"{p.out_features})  # regroups the batch",
            "matmul_no_input_view": f"(relu(h.reshape(-1, {width})) @ w{i}.t()).reshape(*h.shape[:-1], "
                                    f"{p.out_features})",
            "matmul_refeature": f"(h.reshape(-1, {width // refeature_split(width)}) @ w{i}.t()).reshape(*h.shape[:-1], "
                                f"{p.out_features * refeature_split(width)})  # w{i}: ({p.out_features}, "
                                f"{width // refeature_split(width)}); the views change the feature size",
        }[p.linear]
        if p.linear.startswith("matmul") and p.linear != "matmul_refeature" and program.rank == 2:
            linear = f"h @ w{i}.t()"
        if p.linear.startswith("matmul"):
            spelled = f"w{i}.t()" if p.transpose == "t" else f"w{i}.permute{PERMUTE_DIMS[p.transpose]}"
            linear = linear.replace(f"w{i}.t()", spelled)
            if p.between and "reshape(*" in linear and p.linear != "matmul_refeature":
                linear += f"  # r{i} = relu(h).mean() computed between the product and its reshape"
        gelu = (module_text(p.gelu, 1, f"(approximate={p.approximate!r})(z{i})") if p.gelu in MODULE_FORMS
                else f"F.gelu(z{i}, approximate={p.approximate!r})")
        lines.append(f"z{i} = {linear}")
        if p.reader == "inplace":
            lines.append(f"z{i}.add_(1.0)  # in place: its result is read by nobody, yet it changes z{i}")
        if p.between:
            lines.append(f"s{i} = sigmoid(h).mean()  # unrelated nodes between z{i} and its GELU")
        if p.reader == "before":
            lines.append(f"gate{i} = sigmoid(z{i})  # reads z{i} before the GELU")
        lines.append(f"h = {gelu}" + {"before": f" * gate{i}", "after": f" + z{i}  # reads z{i} after the GELU",
                                      "output": f"  # z{i} is also returned", "none": "", "inplace": "",
                                      "gelu": f" + F.gelu(z{i}, approximate="
                                              f"{'none' if p.approximate == 'tanh' else 'tanh'!r})  # a second GELU "
                                              f"reads z{i}",
                                      "size": f"  # and s{i} = aten.sym_size.int(z{i}, 0), added to the captured "
                                              f"graph by hand, multiplies the first output"}[p.reader])
        if p.between:
            lines.append(f"h = h" + (f" + r{i}" if f"# r{i} =" in linear else "") + f" + s{i}")
        width = p.out_features * (refeature_split(width) if p.linear == "matmul_refeature" else 1)
    return "\n".join(lines)


# --- strategies -----------------------------------------------------------------------------------------------

def pair_specs() -> st.SearchStrategy[PairSpec]:
    """One pair along every axis; shrinks toward an nn.Linear -> nn.GELU pair with a bias and no other reader."""
    return st.builds(
        PairSpec,
        out_features=st.integers(min_value=1, max_value=5),
        linear=st.sampled_from(LINEAR_FORMS),
        bias=st.sampled_from(BIASES),
        gelu=st.sampled_from(GELU_FORMS),
        approximate=st.sampled_from(("none", "tanh")),
        reader=st.sampled_from(("none", "none", *READERS[1:])),
        transpose=st.sampled_from(TRANSPOSES),
        between=st.booleans(),
    )


def pair_programs(max_pairs: int = 3, dtypes: tuple[str, ...] = ("float32", "float64")) -> st.SearchStrategy[PairProgram]:
    """Chains of 1..max_pairs pairs on inputs of rank 2..4 with leading sizes all different or all equal, in one of
    `dtypes`."""
    return st.builds(
        PairProgram,
        in_features=st.integers(min_value=1, max_value=5),
        rank=st.sampled_from((3, 2, 4)),
        pairs=st.lists(pair_specs(), min_size=1, max_size=max_pairs).map(tuple),
        dtype=st.sampled_from(dtypes),
        seed=st.integers(min_value=0, max_value=2 ** 16),
        square=st.booleans(),
    )


RECORDING_CAPTURES = ("dynamo", "export", "make_fx_pre_dispatch", *DECOMPOSED_CAPTURES)


def recording_captures(max_pairs: int = 2, dtypes: tuple[str, ...] = ("float64", "float16", "float32")
                       ) -> st.SearchStrategy[tuple[PairProgram, str, bool]]:
    """(program, capture, False): pair programs in `dtypes`, captured by a tool that records values (meta "val",
    Dynamo's "example_value")."""
    def plans(program: PairProgram):
        return st.tuples(st.just(program), st.sampled_from([c for c in program.captures() if c in RECORDING_CAPTURES]),
                         st.just(False))

    return pair_programs(max_pairs, dtypes).flatmap(plans)


def program_captures(max_pairs: int = 3, dynamic: bool = True,
                     cheap: bool = False) -> st.SearchStrategy[tuple[PairProgram, str, bool]]:
    """(program, capture, dynamic): every capture the program's pairs are pairs in (`cheap`: the cheap ones only),
    with a static batch or (`dynamic`, where the capture can) a symbolic one. Shrinks toward the first capture,
    static."""
    def plans(program: PairProgram):
        def with_method(method: str):
            symbolic = st.booleans() if dynamic and method in DYNAMIC_CAPTURES else st.just(False)
            return st.tuples(st.just(program), st.just(method), symbolic)
        return st.sampled_from(program.captures(cheap)).flatmap(with_method)

    return pair_programs(max_pairs).flatmap(plans)
