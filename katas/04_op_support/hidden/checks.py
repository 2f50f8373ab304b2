"""Hidden checks for kata 4 (dialect-aware op support). Learners: solve the kata from README.md, not from here.

Every check captures real graphs with `katas.common.capture` and compares the attempt with the reference
node by node: what `canonical_op` names an NPU op, what `NPUOperatorSupport.is_node_supported` answers,
what `classify` returns, and which partitions `CapabilityBasedPartitioner` proposes with the attempt's
support. Only behaviour is compared: an NPU op must get its exact canonical name, any other node just a
name that is not in NPU_OPS (or None), so any correct way of resolving targets passes.
"""
from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Mapping

import torch
import torch.fx
import torch.nn as nn
from hypothesis import strategies as st
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

from katas.common.capture import CAPTURE_DIALECT
from katas.common.naming import target_name
from checker.kit import CheckFailed, Checks, Context, expect, fuzz
from katas.common import capture, describe, example_input
from katas.common.models import CPU_ONLY_ACTIVATIONS, NPU_FRIENDLY_ACTIVATIONS, LayerSpec, MLPSpec, build_mlp
from katas.common.npu import NPU_OPS
from katas.common.strategies import mlp_specs
from katas.common.zoo import ZOO

CHECKS = Checks()

COMPUTE_OPS = ("call_module", "call_function", "call_method")
DIALECT_OF = CAPTURE_DIALECT
ATEN_CAPTURES = ("make_fx_pre_dispatch", "export", "make_fx", "aot_autograd")
ALL_ACTIVATIONS = NPU_FRIENDLY_ACTIVATIONS + CPU_ONLY_ACTIVATIONS


# --- describing nodes and graphs to a person -------------------------------------------------------------

def target_text(node: torch.fx.Node, submodules: Mapping[str, nn.Module]) -> str:
    target = node.target
    if node.op == "call_module":
        module = submodules.get(target)
        return f"{target}, an nn.{type(module).__name__}" if module is not None else str(target)
    if getattr(target, "__module__", None) == __name__:  # a function defined in these checks plays a user's own
        return f"users_code.{target.__name__}"
    return target_name(target)


def node_text(node: torch.fx.Node, submodules: Mapping[str, nn.Module]) -> str:
    return f"`{node.name}` ({node.op} {target_text(node, submodules)})"


def graph_summary(gm: torch.fx.GraphModule, limit: int = 10) -> str:
    submodules = dict(gm.named_modules())
    ops = [n for n in gm.graph.nodes if n.op in COMPUTE_OPS]
    shown = ", ".join(node_text(n, submodules) for n in ops[:limit])
    return shown + (f", … {len(ops) - limit} more" if len(ops) > limit else "") if ops else "(no compute nodes)"


@functools.cache
def zoo_graph(name: str, method: str) -> torch.fx.GraphModule:
    """The `method` capture of zoo model `name` (cached: checks only read graphs)."""
    model = ZOO[name]
    return capture(model.build(), model.inputs(), method).gm


def zoo_how(name: str, method: str) -> str:
    nodes = zoo_graph(name, method).graph.nodes
    dialect = f"{DIALECT_OF[method]} dialect"
    if method in ("symbolic_trace", "dynamo") and any(isinstance(n.target, torch._ops.OpOverloadPacket) for n in nodes):
        dialect = f"{DIALECT_OF[method]}-level calls next to a direct call of torch.ops.kata.linear_gelu"
    elif method == "symbolic_trace" and not any(n.op == "call_module" for n in nodes):
        dialect = "torch dialect"  # symbolic_trace of functional code: no leaf modules to call
    return f"the {method} graph of the `{name}` model ({dialect})"


def diagnose(node: torch.fx.Node, got: object, want: str, submodules: Mapping[str, nn.Module]) -> str:
    """Why canonical_op's answer `got` for `node` is probably wrong, judged from what it returned (not how)."""
    overload = isinstance(node.target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket))
    if node.op == "call_module":
        module = submodules.get(node.target)
        kind = f"an nn.{type(module).__name__}" if module is not None else "a module"
        others = ", ".join(repr(name) for name in ("fc1", "proj", "act", "block.0") if name != node.target)
        return (f"A call_module target is the attribute name the model's author chose ({node.target!r} here; "
                f"{others} elsewhere); it says nothing reliable about the op. Look the module up "
                f"with submodules[node.target] (dotted names are keys too) and go by its type: this one is {kind}.")
    if node.op == "call_method":
        return ("A call_method node's target is the method's name: x.sigmoid() and x.t() are the same ops as "
                "torch.sigmoid(x) and torch.t(x), so the name is the canonical op.")
    if isinstance(got, str) and got.startswith("<"):
        return ("That is str() of a function object, its repr, not an op name. Dynamo and symbolic_trace graphs "
                "hold the Python callable itself (torch._C._nn.linear, operator.add, torch.relu): resolve it by "
                "identity. A table of aten strings matches nothing here, so the NPU silently gets no work.")
    if overload:
        return (f"An OpOverload or OpOverloadPacket is named by its packet, without namespace or overload: "
                f"{node.target} is {want!r}.")
    if getattr(node.target, "__module__", None) == "_operator":
        return (f"Python operators in forward stay Python operators in Dynamo and symbolic_trace graphs: "
                f"`a + b` is operator.add, `a * b` operator.mul, `a @ b` operator.matmul. They are "
                f"{want!r} too.")
    return (f"The target is the function object {target_text(node, submodules)}; resolve it by identity "
            f"(README.md, 'What a node becomes', lists every torch-level function the checks use).")


# --- calling the attempt ---------------------------------------------------------------------------------

def value(verdict: object) -> object:
    """Compare enum-like answers by value, so a str Enum with the right values works."""
    return getattr(verdict, "value", verdict)


def attempt_classify(ctx: Context, gm: torch.fx.GraphModule, how: str) -> dict[str, object]:
    """The attempt's classify(gm), checked for shape: exactly the compute nodes, each 'npu' or 'cpu'."""
    got = ctx.attempt.classify(gm)
    expect(isinstance(got, Mapping), f"classify on {how} returned a {type(got).__name__}; expected a dict of "
                                     f"node name -> 'npu' or 'cpu'")
    expect(not any(isinstance(key, torch.fx.Node) for key in got),
           f"classify on {how} returned a dict keyed by Node objects; key it by node.name (a str)")
    submodules = dict(gm.named_modules())
    for node in gm.graph.nodes:
        if node.op in COMPUTE_OPS:
            expect(node.name in got, f"classify on {how} has no entry for {node_text(node, submodules)}: every compute "
                                     f"node (call_module, call_function — operator.getitem included — and "
                                     f"call_method) must get 'npu' or 'cpu'")
        elif node.name in got:
            raise CheckFailed(f"classify on {how} gave {node.op} node `{node.name}` a verdict "
                              f"({value(got[node.name])!r}); only compute nodes are classified — "
                              f"placeholder, get_attr and output nodes do no work")
    names = {n.name for n in gm.graph.nodes}
    stray = sorted(set(map(str, got)) - names)
    expect(not stray, f"classify on {how} returned names that are not nodes of the graph: {stray}")
    for name, verdict in got.items():
        expect(value(verdict) in ("npu", "cpu"), f"classify on {how} said {value(verdict)!r} for `{name}`; "
                                                 f"expected 'npu' or 'cpu'")
    return dict(got)


def expect_node_agrees(ctx: Context, node: torch.fx.Node, submodules, verdicts: dict, how: str) -> None:
    """canonical_op, is_node_supported and classify's verdict for one node agree with the reference."""
    want_op = ctx.reference.canonical_op(node, submodules)
    got_op = ctx.attempt.canonical_op(node, submodules)
    on_npu = want_op in NPU_OPS
    where = f"{node_text(node, submodules)} in {how}"
    if node.op not in COMPUTE_OPS:
        expect(got_op is None, f"canonical_op for {where} returned {got_op!r}; expected None: a {node.op} node "
                               f"does no work, so it is no op at all")
    elif on_npu:
        expect(got_op == want_op, f"canonical_op for {where} returned {got_op!r}, expected {want_op!r}. "
                                  f"{diagnose(node, got_op, want_op, submodules)}")
    else:
        what = f"{want_op!r}" if want_op else "an op the NPU does not know"
        expect(not (isinstance(got_op, str) and got_op in NPU_OPS),
               f"canonical_op for {where} returned {got_op!r}, an NPU op, but this node is {what}, which is not in "
               f"NPU_OPS: the NPU has no kernel for it.")
    supported = ctx.attempt.NPUOperatorSupport().is_node_supported(submodules, node)
    if on_npu:
        because = f"its canonical op {want_op!r} is in NPU_OPS"
    elif node.op not in COMPUTE_OPS:
        because = f"a {node.op} node is not an op, so it is never supported"
    else:
        because = f"{want_op or 'this op'!r} is not in NPU_OPS, so it runs on the CPU"
    expect(bool(supported) == on_npu, f"NPUOperatorSupport().is_node_supported(submodules, node) for {where} returned "
                                      f"{supported!r}, expected {on_npu}: {because}")
    if node.op in COMPUTE_OPS:
        verdict = value(verdicts[node.name])
        want = "npu" if on_npu else "cpu"
        expect(verdict == want, f"classify on {how} said {verdict!r} for {node_text(node, submodules)}, expected "
                                f"{want!r}; canonical_op and is_node_supported agree with the reference there, so "
                                f"classify should follow is_node_supported")


def expect_graph_agrees(ctx: Context, gm: torch.fx.GraphModule, how: str) -> None:
    """Every node of `gm` gets the reference's answers."""
    ctx.reference.classify(gm)
    verdicts = attempt_classify(ctx, gm, how)
    submodules = dict(gm.named_modules())
    for node in gm.graph.nodes:
        expect_node_agrees(ctx, node, submodules, verdicts, how)


def expect_fully_on_npu(ctx: Context, gm: torch.fx.GraphModule, how: str) -> None:
    """A graph of NPU ops only: every compute node 'npu'. The message names the dialect and the first miss."""
    submodules = dict(gm.named_modules())
    compute = [n for n in gm.graph.nodes if n.op in COMPUTE_OPS]
    assert all(ctx.reference.classify(gm)[n.name] == "npu" for n in compute), f"internal: {how} is not all-NPU"
    verdicts = attempt_classify(ctx, gm, how)
    missed = [n for n in compute if value(verdicts[n.name]) != "npu"]
    if missed:
        first = missed[0]
        want_op = ctx.reference.canonical_op(first, submodules)
        got_op = ctx.attempt.canonical_op(first, submodules)
        if got_op != want_op:
            reason = (f"canonical_op returned {got_op!r}, expected {want_op!r}. "
                      f"{diagnose(first, got_op, want_op, submodules)}")
        elif not ctx.attempt.NPUOperatorSupport().is_node_supported(submodules, first):
            reason = (f"canonical_op rightly says {want_op!r}, which is in NPU_OPS, but "
                      f"NPUOperatorSupport().is_node_supported(submodules, node) said no.")
        else:
            reason = (f"canonical_op ({want_op!r}) and is_node_supported (True) are right, but classify said "
                      f"{value(verdicts[first.name])!r}: classify should follow is_node_supported.")
        on = len(compute) - len(missed)
        raise CheckFailed(
            f"classify put {on} of {len(compute)} compute nodes of {how} on the NPU, but every one of them is an "
            f"NPU op{' — the accelerator would do nothing' if on == 0 else ''}.\n"
            f"First missed node: {node_text(first, submodules)}: {reason}\n"
            f"graph: {graph_summary(gm)}")
    expect_graph_agrees(ctx, gm, how)


def _fuzz_dialect(ctx: Context, specs, methods: tuple[str, ...], max_examples: int | None = None) -> None:
    strategy = st.tuples(specs, st.sampled_from(methods))

    def prop(example) -> None:
        spec, method = example
        gm = capture(build_mlp(spec), (example_input(spec),), method).gm
        expect_graph_agrees(ctx, gm, f"the {method} graph of the random MLP below ({DIALECT_OF[method]} dialect)")

    fuzz(ctx, strategy, prop, describe=lambda ex: f"{describe(ex[0])}\ncaptured with: {ex[1]}",
         max_examples=max_examples)


def cpu_sandwich(style: str) -> MLPSpec:
    """Linear layers with every CPU-only activation between them: layer_norm, sin, softmax, cumsum."""
    layers = (LayerSpec(5, activation="layer_norm"), LayerSpec(5, activation="sin", reuse="residual"),
              LayerSpec(4, activation="softmax"), LayerSpec(3, activation="cumsum", reuse="return"))
    return MLPSpec(4, layers, batch_shape=(2, 3), style=style)


def expect_cpu_ops_on_cpu(ctx: Context, graphs) -> None:
    """Graphs mixing NPU and CPU ops: every node agrees with the reference, and the graph really is mixed."""
    for gm, how in graphs:
        verdicts = ctx.reference.classify(gm)
        assert {"npu", "cpu"} <= set(verdicts.values()), f"internal: {how} is not mixed"
        expect_graph_agrees(ctx, gm, how)


def sandwich_graphs(methods: tuple[str, ...], styles: tuple[str, ...]):
    for style in styles:
        spec = cpu_sandwich(style)
        for method in methods:
            gm = capture(build_mlp(spec), (example_input(spec),), method).gm
            yield gm, (f"the {method} graph ({DIALECT_OF[method]} dialect) of an MLP with "
                       f"{'nn.Module' if style == 'modules' else 'functional'} calls: Linear, LayerNorm, Linear, "
                       f"sin (+ residual), Linear, softmax, Linear, cumsum")


# --- stage: nodes ----------------------------------------------------------------------------------------

@CHECKS.check(stage="nodes", weight=2)
def structural_nodes_are_never_supported(ctx):
    "placeholder, get_attr and output nodes: canonical_op None, never supported, not classified"
    for name, method in (("functional", "symbolic_trace"), ("mlp", "make_fx"), ("fused_linear_gelu", "symbolic_trace")):
        gm = zoo_graph(name, method)
        submodules = dict(gm.named_modules())
        for node in gm.graph.nodes:
            if node.op in COMPUTE_OPS:
                continue
            where = f"{node.op} node `{node.name}` of {zoo_how(name, method)}"
            got_op = ctx.attempt.canonical_op(node, submodules)
            expect(got_op is None, f"canonical_op for {where} returned {got_op!r}; expected None: it does no work")
            supported = ctx.attempt.NPUOperatorSupport().is_node_supported(submodules, node)
            expect(not supported, f"NPUOperatorSupport().is_node_supported(submodules, node) for {where} returned "
                                  f"{supported!r}; expected False. torch's OperatorSupport says True for every "
                                  f"non-callable node, and then CapabilityBasedPartitioner(..., "
                                  f"allows_single_node_partition=True) pulls the graph's inputs and output into an "
                                  f"NPU partition. The NPU runs ops; these nodes are not ops.")
        attempt_classify(ctx, gm, zoo_how(name, method))


# node picked by (zoo model, capture, node name) -> canonical op, with the reason a learner needs
CANONICAL_CASES = (
    ("mlp", "symbolic_trace", "fc1", "linear", "call_module: the submodule's type, nn.Linear, not its name"),
    ("mlp", "symbolic_trace", "act", "gelu", "call_module of an nn.GELU"),
    ("mlp", "dynamo", "linear", "linear", "F.linear is the builtin torch._C._nn.linear"),
    ("residual", "dynamo", "add", "add", "operator.add, what `a + b` traces to"),
    ("functional", "dynamo", "sigmoid", "sigmoid", "call_method: x.sigmoid() is named by its method"),
    ("mlp", "export", "linear", "linear", "aten.linear.default"),
    ("mlp", "make_fx", "addmm", "addmm", "aten.addmm.default"),
    ("mlp", "make_fx", "t", "t", "aten.t.default"),
    ("mlp", "export_core", "permute", "permute", "aten.permute.default"),
    ("residual", "export_core", "add", "add", "aten.add.Tensor: the overload is 'Tensor', the op is add"),
)


@CHECKS.check(stage="nodes", weight=2)
def canonical_names_in_every_dialect(ctx):
    "canonical_op names one NPU op in each dialect: Linear, linear, aten.linear, aten.addmm, ..."
    for name, method, node_name, want, why in CANONICAL_CASES:
        gm = zoo_graph(name, method)
        submodules = dict(gm.named_modules())
        node = next(n for n in gm.graph.nodes if n.name == node_name)
        got = ctx.attempt.canonical_op(node, submodules)
        expect(got == want, f"canonical_op for {node_text(node, submodules)} in {zoo_how(name, method)} returned "
                            f"{got!r}, expected {want!r} ({why}). {diagnose(node, got, want, submodules)}")


# --- stages: one per dialect -----------------------------------------------------------------------------

ALL_NPU_GRAPHS = {
    "module": [(m, "symbolic_trace") for m in ("mlp", "mlp_3d", "residual")],
    "torch": [(m, "dynamo") for m in ("mlp", "residual", "functional", "pointwise")]
             + [(m, "symbolic_trace") for m in ("functional", "pointwise")],
    "aten": [(m, c) for c in ATEN_CAPTURES for m in ("mlp_3d", "residual", "functional")] + [("pointwise", "make_fx")],
    "core_aten": [(m, "export_core") for m in ("mlp_3d", "residual", "functional", "pointwise")],
}
MIXED_ZOO = ("norm_block", "attention", "renamed")


def _all_npu(ctx: Context, dialect: str) -> None:
    for name, method in ALL_NPU_GRAPHS[dialect]:
        expect_fully_on_npu(ctx, zoo_graph(name, method), zoo_how(name, method))


def _mixed(ctx: Context, methods: tuple[str, ...], styles: tuple[str, ...]) -> None:
    zoo = ((zoo_graph(name, method), zoo_how(name, method)) for method in methods for name in MIXED_ZOO)
    expect_cpu_ops_on_cpu(ctx, itertools.chain(zoo, sandwich_graphs(methods, styles)))  # captured lazily


@CHECKS.check(stage="module", weight=3)
def module_graphs_of_npu_ops_run_fully_on_npu(ctx):
    "module dialect: symbolic_trace graphs of NPU ops are 100% NPU"
    _all_npu(ctx, "module")


@CHECKS.check(stage="module", weight=2)
def module_graphs_send_cpu_ops_to_cpu(ctx):
    "module dialect: LayerNorm, Softmax, sin, cumsum, max, getitem run on the CPU"
    _mixed(ctx, ("symbolic_trace",), ("modules",))


@CHECKS.check(stage="module", weight=3)
def module_random_mlps_agree_with_reference(ctx):
    "module dialect: random MLPs with CPU-only layers mixed in, node by node"
    _fuzz_dialect(ctx, mlp_specs(activations=ALL_ACTIVATIONS, styles=("modules",)), ("symbolic_trace",))


@CHECKS.check(stage="torch", weight=3)
def torch_graphs_of_npu_ops_run_fully_on_npu(ctx):
    "torch dialect: Dynamo graphs of NPU ops are 100% NPU"
    _all_npu(ctx, "torch")


@CHECKS.check(stage="torch", weight=2)
def torch_graphs_send_cpu_ops_to_cpu(ctx):
    "torch dialect: layer_norm, softmax, sin, cumsum, chunk, div, getitem run on the CPU"
    _mixed(ctx, ("dynamo",), ("modules", "functional"))


@CHECKS.check(stage="torch", weight=3)
def torch_random_mlps_agree_with_reference(ctx):
    "torch dialect: random MLPs (modules and functional) captured by Dynamo, node by node"
    _fuzz_dialect(ctx, mlp_specs(activations=ALL_ACTIVATIONS, styles=("modules", "functional")), ("dynamo",))


@CHECKS.check(stage="aten", weight=3)
def aten_graphs_of_npu_ops_run_fully_on_npu(ctx):
    "aten dialect: make_fx, export and aot_autograd graphs of NPU ops are 100% NPU"
    _all_npu(ctx, "aten")


@CHECKS.check(stage="aten", weight=2)
def aten_graphs_send_cpu_ops_to_cpu(ctx):
    "aten dialect: native_layer_norm, _softmax, bmm, _unsafe_view, getitem run on the CPU"
    _mixed(ctx, ATEN_CAPTURES, ("modules",))


@CHECKS.check(stage="aten", weight=3)
def aten_random_mlps_agree_with_reference(ctx):
    "aten dialect: random MLPs in make_fx, export and aot_autograd graphs, node by node"
    _fuzz_dialect(ctx, mlp_specs(activations=ALL_ACTIVATIONS, styles=("modules", "functional")), ATEN_CAPTURES)


@CHECKS.check(stage="core_aten", weight=3)
def core_aten_graphs_of_npu_ops_run_fully_on_npu(ctx):
    "core_aten dialect: export().run_decompositions() graphs of NPU ops are 100% NPU"
    _all_npu(ctx, "core_aten")


@CHECKS.check(stage="core_aten", weight=2)
def core_aten_graphs_send_cpu_ops_to_cpu(ctx):
    "core_aten dialect: decomposed layer_norm, softmax, split, bmm run on the CPU"
    _mixed(ctx, ("export_core",), ("modules",))


@CHECKS.check(stage="core_aten", weight=3)
def core_aten_random_mlps_agree_with_reference(ctx):
    "core_aten dialect: random MLPs after run_decompositions(), node by node"
    _fuzz_dialect(ctx, mlp_specs(activations=ALL_ACTIVATIONS, styles=("modules", "functional")), ("export_core",),
                  max_examples=max(4, ctx.max_examples // 3))  # export + run_decompositions: ~0.25 s each


# --- stage: partition ------------------------------------------------------------------------------------

def partition_sets(gm: torch.fx.GraphModule, support, single: bool) -> set[frozenset[str]]:
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=single)
    return {frozenset(n.name for n in p.nodes) for p in partitioner.propose_partitions()}


def show_partitions(partitions: set[frozenset[str]], gm: torch.fx.GraphModule) -> str:
    order = {n.name: i for i, n in enumerate(gm.graph.nodes)}
    ordered = sorted((sorted(p, key=order.get) for p in partitions), key=lambda p: order[p[0]])
    return "; ".join("{" + ", ".join(p) + "}" for p in ordered) or "(none)"


def first_disagreement(ctx: Context, gm: torch.fx.GraphModule) -> str:
    submodules = dict(gm.named_modules())
    for node in gm.graph.nodes:
        want = ctx.reference.NPUOperatorSupport().is_node_supported(submodules, node)
        got = ctx.attempt.NPUOperatorSupport().is_node_supported(submodules, node)
        if bool(got) != bool(want):
            return (f"Yours answers {got!r} for {node_text(node, submodules)}, expected {want}"
                    f"{' (its op is in NPU_OPS)' if want else ''}.")
    return ("Yours answers like the reference's for every node when called with dict(gm.named_modules()); does "
            "it depend on anything besides its two arguments?")


def expect_same_partitions(ctx: Context, gm: torch.fx.GraphModule, how: str) -> None:
    for single in (True, False):
        want = partition_sets(gm, ctx.reference.NPUOperatorSupport(), single)
        got = partition_sets(gm, ctx.attempt.NPUOperatorSupport(), single)
        if got == want:
            continue
        kinds = {n.name: n.op for n in gm.graph.nodes}
        odd = sorted({name for p in got for name in p if kinds.get(name) not in COMPUTE_OPS})
        if odd:
            why = (f"Your partitions contain {', '.join(f'{kinds[n]} `{n}`' for n in odd)}: is_node_supported said "
                   f"yes to nodes that are not ops, so the partitioner pulled them in.")
        else:
            why = ("The partitioner asks is_node_supported(submodules, node) about each node. "
                   + first_disagreement(ctx, gm))
        raise CheckFailed(
            f"CapabilityBasedPartitioner(gm, NPUOperatorSupport(), allows_single_node_partition={single})"
            f".propose_partitions() on {how} gave\n  yours:     {show_partitions(got, gm)}\n"
            f"  reference: {show_partitions(want, gm)}\n{why}")


def partition_captures(ctx: Context) -> tuple[str, ...]:
    """The captures the partition checks cut up.

    The partitioner sees nothing but is_node_supported's answers, and every dialect stage already compares
    those node by node, so a learner's run partitions the three cheap captures; the deep profile adds the
    export ones (export + run_decompositions costs about 0.2 s a graph).
    """
    cheap = ("symbolic_trace", "dynamo", "make_fx")
    return cheap + ("export", "export_core") if ctx.deep else cheap


@CHECKS.check(stage="partition", weight=3)
def partitions_match_reference_on_zoo(ctx):
    "CapabilityBasedPartitioner with your NPUOperatorSupport proposes the reference's partitions (zoo)"
    for method in partition_captures(ctx):
        for name in ("mlp", "residual", "norm_block", "attention", "functional", "renamed", "fused_linear_gelu"):
            expect_same_partitions(ctx, zoo_graph(name, method), zoo_how(name, method))


@CHECKS.check(stage="partition", weight=3)
def partitions_match_reference_on_random_mlps(ctx):
    "CapabilityBasedPartitioner partitions of random mixed MLPs"
    strategy = st.tuples(mlp_specs(activations=ALL_ACTIVATIONS, styles=("modules", "functional")),
                         st.sampled_from(partition_captures(ctx)))

    def prop(example) -> None:
        spec, method = example
        gm = capture(build_mlp(spec), (example_input(spec),), method).gm
        expect_same_partitions(ctx, gm, f"the {method} graph of the random MLP below")

    fuzz(ctx, strategy, prop, describe=lambda ex: f"{describe(ex[0])}\ncaptured with: {ex[1]}",
         max_examples=max(8, ctx.max_examples // 2))


# --- stage: edge_cases -----------------------------------------------------------------------------------

def _methods(x, y):
    h = x.t().t().relu().add(y).view(-1, 4).reshape(2, 4)
    return h.transpose(0, 1).permute(1, 0).matmul(y.t()).mul(y[:, :2].sum()).sigmoid().tanh().sin()


@CHECKS.check(stage="edge_cases", weight=2)
def call_method_nodes_resolve_by_method_name(ctx):
    "call_method nodes (x.t(), x.relu(), x.add(y), x.view(...)) are named by their method"
    gm = torch.fx.symbolic_trace(_methods)
    submodules = dict(gm.named_modules())
    how = "symbolic_trace of `x.t().t().relu().add(y).view(-1, 4).reshape(...).transpose(...).permute(...)" \
          ".matmul(...).mul(...).sigmoid().tanh().sin()`"
    for node in gm.graph.nodes:
        if node.op == "call_method" and node.target in NPU_OPS:
            got = ctx.attempt.canonical_op(node, submodules)
            expect(got == node.target, f"canonical_op for {node_text(node, submodules)} in {how} returned {got!r}, "
                                       f"expected {node.target!r}. {diagnose(node, got, node.target, submodules)}")
    expect_graph_agrees(ctx, gm, how)


@CHECKS.check(stage="edge_cases", weight=2)
def modules_resolve_by_type_not_attribute_name(ctx):
    "call_module nodes go by module type: `proj` is a Linear, `act` a Softmax, `block.0` a Linear"
    gm = zoo_graph("renamed", "symbolic_trace")
    submodules = dict(gm.named_modules())
    how = ("symbolic_trace of the `renamed` model (proj: Linear, act: Softmax, block: Sequential(Linear, SiLU), "
           "head: Linear)")
    for node in gm.graph.nodes:
        if node.op == "call_module":
            want = ctx.reference.canonical_op(node, submodules)
            got = ctx.attempt.canonical_op(node, submodules)
            ok = got == want if want in NPU_OPS else not (isinstance(got, str) and got in NPU_OPS)
            expect(ok, f"canonical_op for {node_text(node, submodules)} in {how} returned {got!r}, expected "
                       f"{want!r}. {diagnose(node, got, want, submodules)}")
    expect_graph_agrees(ctx, gm, how)


@CHECKS.check(stage="edge_cases", weight=2)
def custom_op_linear_gelu_runs_on_npu(ctx):
    "the fused op kata::linear_gelu is 'linear_gelu' on the NPU, as packet and as overload"
    for method in ("symbolic_trace", "dynamo", "make_fx", "export_core"):
        gm = zoo_graph("fused_linear_gelu", method)
        submodules = dict(gm.named_modules())
        node = next(n for n in gm.graph.nodes if n.name == "linear_gelu")
        got = ctx.attempt.canonical_op(node, submodules)
        expect(got == "linear_gelu", f"canonical_op for {node_text(node, submodules)} in "
                                     f"{zoo_how('fused_linear_gelu', method)} returned {got!r}, expected "
                                     f"'linear_gelu'. {diagnose(node, got, 'linear_gelu', submodules)}")
        expect_fully_on_npu(ctx, gm, zoo_how("fused_linear_gelu", method))


@CHECKS.check(stage="edge_cases", weight=1)
def getitem_is_a_cpu_compute_node(ctx):
    "operator.getitem is a compute node, classified 'cpu'"
    gm = zoo_graph("norm_block", "make_fx")
    how = zoo_how("norm_block", "make_fx")
    verdicts = attempt_classify(ctx, gm, how)
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is operator.getitem:
            got = value(verdicts[node.name])
            expect(got == "cpu", f"classify on {how} said {got!r} for getitem node `{node.name}`, expected 'cpu': "
                                 f"'getitem' is not in NPU_OPS (it unpacks native_layer_norm's and max's outputs, "
                                 f"which run on the CPU)")
    expect_graph_agrees(ctx, gm, how)


def gelu(x):
    """A user's own approximation, named like the NPU op but not torch's gelu: the NPU has no kernel for it."""
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


@CHECKS.check(stage="edge_cases", weight=1)
def user_function_named_gelu_stays_on_cpu(ctx):
    "a user's own function named `gelu` (kept whole in the graph) runs on the CPU"
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(torch.relu, (graph.call_function(gelu, (x,)),)))
    gm = torch.fx.GraphModule(nn.Module(), graph)
    how = ("the graph relu(gelu(x)) whose `gelu` is the user's own Python function, kept whole as torch.fx.wrap "
           "or a custom tracer leaves it")
    node = next(n for n in gm.graph.nodes if n.target is gelu)
    got = ctx.attempt.canonical_op(node, {})
    expect(not (isinstance(got, str) and got in NPU_OPS),
           f"canonical_op for `{node.name}` (call_function on the user's own gelu) in {how} returned {got!r}. Only "
           f"torch's own functions are NPU ops: the NPU has no kernel for arbitrary Python that happens to be "
           f"called gelu. Resolve call_function targets by identity, not by __name__; an unknown callable is "
           f"None and runs on the CPU.")
    expect_graph_agrees(ctx, gm, how)
