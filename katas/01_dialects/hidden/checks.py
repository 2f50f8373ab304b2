"""Hidden checks for kata 1 (graph dialects). Learners: solve the kata from README.md, not from here.

Every check builds real graphs with `katas.common.capture` and compares the attempt's answer with the
dialect each capture is known to produce (see the table in katas/common/capture.py) and, node by node,
with the reference solution.
"""
from __future__ import annotations

import operator

import torch
import torch.fx
from hypothesis import strategies as st

from checker.kit import Checks, Context, CheckFailed, expect, fuzz
from katas.common import capture, describe, example_input
from katas.common.capture import CAPTURE_DIALECT, CAPTURES
from katas.common.naming import target_name
from katas.common.models import build_mlp
from katas.common.strategies import mlp_specs
from katas.common.zoo import ZOO

CHECKS = Checks()


def value(dialect) -> str | None:
    """Compare enums by value, so an attempt's own Dialect class works as long as its values match."""
    return None if dialect is None else str(getattr(dialect, "value", dialect))


def node_text(node: torch.fx.Node) -> str:
    return f"{node.name} ({node.op} {target_name(node.target)})"


def graph_summary(gm: torch.fx.GraphModule, limit: int = 8) -> str:
    ops = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output", "get_attr")]
    shown = ", ".join(node_text(n) for n in ops[:limit])
    return shown + (f", … {len(ops) - limit} more" if len(ops) > limit else "") if ops else "(no op nodes)"


def captured(model_name: str, method: str) -> torch.fx.GraphModule:
    model = ZOO[model_name]
    return capture(model.build(), model.inputs(), method).gm


def first_node(gm: torch.fx.GraphModule, predicate) -> torch.fx.Node:
    return next(n for n in gm.graph.nodes if predicate(n))


def expect_node(ctx: Context, node: torch.fx.Node, expected: str | None, why: str) -> None:
    got = value(ctx.attempt.node_dialect(node))
    expect(got == expected, f"node_dialect({node_text(node)}) returned {got!r}, expected {expected!r}: {why}")


def expect_graph(ctx: Context, gm: torch.fx.GraphModule, expected: str, how: str, why: str) -> None:
    try:
        got = value(ctx.attempt.detect_dialect(gm))
    except ValueError as exc:
        if type(exc).__name__ != "MixedDialectError":
            raise
        raise CheckFailed(f"detect_dialect on {how} raised MixedDialectError ({exc}), expected {expected!r}: {why}\n"
                          f"graph: {graph_summary(gm)}") from None
    expect(got == expected, f"detect_dialect on {how} returned {got!r}, expected {expected!r}: {why}\n"
                            f"graph: {graph_summary(gm)}")


# --- stage: nodes -----------------------------------------------------------------------------------------

@CHECKS.check(stage="nodes", weight=2)
def call_module_node_is_module(ctx):
    "a call_module node is MODULE"
    gm = captured("mlp", "symbolic_trace")
    expect_node(ctx, first_node(gm, lambda n: n.op == "call_module"), "module",
                "symbolic_trace keeps leaf modules as call_module nodes whose target is the submodule's name")


@CHECKS.check(stage="nodes", weight=1)
def structural_nodes_are_neutral(ctx):
    "placeholder, get_attr and output nodes are neutral (None)"
    for gm, how in ((captured("mlp", "make_fx"), "make_fx"), (captured("functional", "symbolic_trace"), "symbolic_trace")):
        for node in gm.graph.nodes:
            if node.op in ("placeholder", "get_attr", "output"):
                expect_node(ctx, node, None, f"{node.op} nodes appear in every dialect, so they say nothing about it ({how} graph)")


@CHECKS.check(stage="nodes", weight=2)
def torch_level_calls_are_torch(ctx):
    "torch functions and tensor methods are TORCH"
    gm = captured("mlp", "dynamo")
    expect_node(ctx, first_node(gm, lambda n: n.op == "call_function"), "torch",
                "Dynamo graphs call torch-level functions such as torch._C._nn.linear (that is what F.linear is)")
    gm = captured("attention", "symbolic_trace")
    expect_node(ctx, first_node(gm, lambda n: n.op == "call_method"), "torch",
                "a call_method node (x.softmax(...), x.transpose(...)) is a torch-level tensor method")


@CHECKS.check(stage="nodes", weight=2)
def overloads_split_by_core_tag(ctx):
    "OpOverloads are CORE_ATEN when tagged torch.Tag.core, else ATEN"
    gm = captured("mlp", "make_fx")
    expect_node(ctx, first_node(gm, lambda n: n.target == torch.ops.aten.t.default), "aten",
                "aten.t.default is an OpOverload without torch.Tag.core in its .tags")
    expect_node(ctx, first_node(gm, lambda n: n.target == torch.ops.aten.addmm.default), "core_aten",
                "aten.addmm.default carries torch.Tag.core in its .tags")


@CHECKS.check(stage="nodes", weight=1)
def getitem_is_neutral(ctx):
    "operator.getitem is neutral (None)"
    gm = captured("norm_block", "make_fx")
    expect_node(ctx, first_node(gm, lambda n: n.target is operator.getitem), None,
                "aten ops with several outputs (native_layer_norm, max.dim) are unpacked with operator.getitem in aten graphs too")


# --- stages: module, torch, aten, core_aten: whole graphs from every capture -------------------------------

def _zoo_in_capture(ctx, models, method, expected, why):
    for name in models:
        expect_graph(ctx, captured(name, method), expected, f"{method} of the `{name}` model", why)


@CHECKS.check(stage="module", weight=3)
def symbolic_trace_of_modules_is_module(ctx):
    "symbolic_trace of nn.Module models is MODULE, even with torch functions in forward"
    _zoo_in_capture(ctx, ("mlp", "residual", "norm_block", "attention"), "symbolic_trace", "module",
                    "one call_module node makes the graph MODULE; torch.relu or x.softmax() beside it do not change that")


@CHECKS.check(stage="torch", weight=3)
def dynamo_graphs_are_torch(ctx):
    "Dynamo graphs are TORCH"
    _zoo_in_capture(ctx, ("mlp", "residual", "norm_block", "attention", "pointwise"), "dynamo", "torch",
                    "Dynamo inlines modules: the graph calls torch functions and methods, parameters are placeholders")


@CHECKS.check(stage="torch", weight=2)
def symbolic_trace_of_functional_code_is_torch(ctx):
    "symbolic_trace of functional code is TORCH"
    _zoo_in_capture(ctx, ("functional", "pointwise"), "symbolic_trace", "torch",
                    "a forward written with torch.nn.functional has no leaf modules to call")

    def plain_function(x, w):
        return torch.nn.functional.gelu(x @ w).sum(dim=-1)

    expect_graph(ctx, torch.fx.symbolic_trace(plain_function), "torch", "symbolic_trace of a plain function",
                 "operator.matmul, F.gelu and .sum() are torch-level")


@CHECKS.check(stage="aten", weight=3)
def make_fx_export_aot_graphs_are_aten(ctx):
    "make_fx, export and aot_autograd graphs of Linear models are ATEN"
    for method in ("make_fx_pre_dispatch", "export", "make_fx", "aot_autograd"):
        _zoo_in_capture(ctx, ("mlp", "mlp_3d", "attention"), method, "aten",
                        "aten.linear (pre-dispatch, export) and aten.t (make_fx, aot_autograd) are not core ATen ops")


@CHECKS.check(stage="core_aten", weight=3)
def decomposed_exports_are_core_aten(ctx):
    "export(...).run_decompositions() graphs are CORE_ATEN"
    _zoo_in_capture(ctx, ("mlp", "mlp_3d", "residual", "attention", "functional"), "export_core", "core_aten",
                    "run_decompositions() lowers every op to the core ATen set: each target has torch.Tag.core")


@CHECKS.check(stage="core_aten", weight=2)
def dialect_is_about_content_not_tool(ctx):
    "make_fx of a model of core ops only is CORE_ATEN"
    _zoo_in_capture(ctx, ("pointwise",), "make_fx", "core_aten",
                    "the dialect is decided by the graph's ops, not by the tool: relu, mul and add are all core ATen")


# --- stage: edge_cases ----------------------------------------------------------------------------------

@CHECKS.check(stage="edge_cases", weight=2)
def getitem_does_not_mix_levels(ctx):
    "aten graphs with operator.getitem are not mixed"
    expect_graph(ctx, captured("norm_block", "make_fx"), "aten", "make_fx of `norm_block` (LayerNorm, max)",
                 "operator.getitem unpacks native_layer_norm's and max's outputs; it is neutral, not torch-level")
    expect_graph(ctx, captured("norm_block", "export_core"), "core_aten", "export_core of `norm_block`",
                 "getitem nodes are neutral, so the remaining ops (all core) decide")


@CHECKS.check(stage="edge_cases", weight=2)
def custom_op_is_aten_not_core(ctx):
    "a custom op (kata::linear_gelu) is ATEN, never core"
    from torch.fx.experimental.proxy_tensor import make_fx

    def fused(x, w, b):
        return torch.relu(torch.ops.kata.linear_gelu(x, w, b))

    gm = make_fx(fused)(torch.randn(2, 4), torch.randn(3, 4), torch.randn(3))
    node = first_node(gm, lambda n: n.target == torch.ops.kata.linear_gelu.default)
    expect_node(ctx, node, "aten", "a custom op is an OpOverload (torch.ops.kata...), and no custom op has torch.Tag.core")
    expect_graph(ctx, gm, "aten", "make_fx of relu(kata.linear_gelu(x, w, b))",
                 "core ATen is a closed set of aten ops; a custom op makes the graph ATEN")


@CHECKS.check(stage="edge_cases", weight=1)
def graph_without_ops_is_torch(ctx):
    "a graph with no op nodes is TORCH"
    expect_graph(ctx, torch.fx.symbolic_trace(lambda x: x), "torch", "symbolic_trace of `lambda x: x`",
                 "the lesson's rule for a graph with nothing to go on: TORCH, what plain Python code traces to")


@CHECKS.check(stage="edge_cases", weight=2)
def export_module_guards_fn_is_neutral(ctx):
    "ep.module()'s _guards_fn call_module is neutral"
    model = ZOO["mlp"]
    gm = torch.export.export(model.build(), model.inputs()).module()
    guards = [n for n in gm.graph.nodes if n.op == "call_module" and n.target == "_guards_fn"]
    expect(guards, "internal: this torch build's ep.module() has no _guards_fn node")
    expect_node(ctx, guards[0], None, "export's unlifted module calls _guards_fn to check inputs: bookkeeping, not the model")
    expect_graph(ctx, gm, "aten", "torch.export.export(mlp).module()", "apart from _guards_fn it is the export graph")


class _HalfLowered(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(torch.ops.aten.relu.default(x))


def _expect_mixed(ctx, gm, how, high_level, aten_level):
    error_type = getattr(ctx.attempt, "MixedDialectError", None)
    try:
        got = ctx.attempt.detect_dialect(gm)
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - any other exception is reported below
        if error_type is None or not isinstance(exc, error_type):
            raise CheckFailed(f"detect_dialect on {how} raised {type(exc).__name__}: {exc}; expected MixedDialectError") from None
        text = str(exc)
        expect(high_level in text and aten_level in text,
               f"MixedDialectError on {how} should name a node of each level (e.g. {high_level!r} and {aten_level!r}) "
               f"so the user can find them; the message was: {text!r}")
        return
    raise CheckFailed(f"detect_dialect on {how} returned {value(got)!r}; expected MixedDialectError because "
                      f"node {high_level!r} is above aten level and node {aten_level!r} is an aten OpOverload\n"
                      f"graph: {graph_summary(gm)}")


@CHECKS.check(stage="edge_cases", weight=2)
def module_and_aten_nodes_raise_mixed(ctx):
    "call_module beside an OpOverload raises MixedDialectError naming both"
    gm = torch.fx.symbolic_trace(_HalfLowered())
    _expect_mixed(ctx, gm, "symbolic_trace of a module calling self.fc and torch.ops.aten.relu.default", "fc", "relu")


@CHECKS.check(stage="edge_cases", weight=1)
def torch_and_aten_nodes_raise_mixed(ctx):
    "torch-level calls beside an OpOverload raise MixedDialectError"
    gm = torch.fx.symbolic_trace(lambda x: torch.ops.aten.relu.default(x).sin())
    _expect_mixed(ctx, gm, "symbolic_trace of `aten.relu.default(x).sin()`", "sin", "relu")


# --- stage: fuzz -----------------------------------------------------------------------------------------

FUZZ_CAPTURES = CAPTURES


@CHECKS.check(stage="fuzz", weight=4)
def random_mlps_in_every_capture(ctx):
    "random MLPs in every capture: graph and every node agree with the reference"
    strategy = st.tuples(mlp_specs(styles=("modules", "functional")), st.sampled_from(FUZZ_CAPTURES))

    def prop(example):
        spec, method = example
        model = build_mlp(spec)
        gm = capture(model, (example_input(spec),), method).gm
        for node in gm.graph.nodes:
            want = value(ctx.reference.node_dialect(node))
            got = value(ctx.attempt.node_dialect(node))
            expect(got == want, f"node_dialect({node_text(node)}) returned {got!r}, expected {want!r}")
        want = value(ctx.reference.detect_dialect(gm))
        if spec.style == "modules":
            assert want == CAPTURE_DIALECT[method], "internal: reference disagrees with the capture table"
        expect_graph(ctx, gm, want, f"{method} of the random MLP below", "see the lesson's table of captures")

    fuzz(ctx, strategy, prop, describe=lambda ex: f"{describe(ex[0])}\ncaptured with: {ex[1]}")
