"""Hidden checks for kata 1 (graph dialects). Learners: solve the kata from README.md, not from here.

Every check builds real graphs with `katas.common.capture` and compares the attempt's answer with the
dialect the lesson assigns: whole graphs against what each model and capture are known to give (see the table
in katas/common/capture.py and the models' docstrings in katas/common/zoo.py), single nodes against the lesson's
node-by-node rules (the fuzz check asks the reference for those, since the lesson defines them node by node).
"""
from __future__ import annotations

import functools
import importlib.util
import operator
import re
from pathlib import Path

import torch
import torch.fx
from hypothesis import strategies as st

from checker.kit import load_module
from checker.kit import Checks, Context, CheckFailed, _attempt_location, expect, fuzz
from katas.common import capture, describe, example_input
from katas.common.capture import CAPTURE_DIALECT, CAPTURES
from katas.common.models import WRAPPINGS, build_mlp, describe_wrapping, wrap_model
from katas.common.naming import target_name
from katas.common.strategies import capture_plans, dialect_programs, mlp_specs
from katas.common.zoo import ZOO

CHECKS = Checks()
aten = torch.ops.aten
HIGH_LEVELS = ("module", "torch")  # the dialects of module- and torch-level nodes; "aten", "core_aten" are aten-level


probes = load_module(Path(__file__).with_name("probes.py"), "kata01_dialects_probes")  # asked where the attempt runs
programs = load_module(Path(__file__).with_name("programs.py"), "kata01_dialects_programs")  # generated models


def value(dialect) -> str | None:
    """Compare enums by value, so an attempt's own Dialect class works as long as its values match."""
    return None if dialect is None else str(getattr(dialect, "value", dialect))


def node_text(node: torch.fx.Node) -> str:
    return f"{node.name} ({node.op} {target_name(node.target)})"


def _attribute(gm: torch.fx.GraphModule, qualified_name: str) -> object:
    return functools.reduce(getattr, qualified_name.split("."), gm)


def subgraphs(gm: torch.fx.GraphModule, node: torch.fx.Node) -> list[tuple[str, torch.fx.GraphModule]]:
    """The subgraphs a higher-order op node calls: its get_attr arguments that hold GraphModules."""
    if node.op != "call_function" or not isinstance(node.target, torch._ops.HigherOrderOperator):
        return []
    found = []
    for arg in node.all_input_nodes:
        if arg.op == "get_attr" and isinstance(_attribute(gm, arg.target), torch.fx.GraphModule):
            found.append((arg.target, _attribute(gm, arg.target)))
    return found


def all_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The graph's nodes and, after each higher-order op, the nodes of the subgraphs it calls (recursively)."""
    nodes = []
    for node in gm.graph.nodes:
        nodes.append(node)
        for _, sub in subgraphs(gm, node):
            nodes.extend(all_nodes(sub))
    return nodes


def graph_summary(gm: torch.fx.GraphModule, limit: int = 10) -> str:
    """The op nodes a person would look at, subgraphs of higher-order ops spelled out after their node."""
    shown: list[str] = []
    total = 0

    def walk(graph_module: torch.fx.GraphModule, prefix: str) -> None:
        nonlocal total
        for node in graph_module.graph.nodes:
            if node.op in ("placeholder", "output", "get_attr"):
                continue
            total += 1
            if len(shown) < limit:
                shown.append(prefix + node_text(node))
            for name, sub in subgraphs(graph_module, node):
                walk(sub, f"{prefix}{name}/")

    walk(gm, "")
    if not shown:
        return "(no op nodes)"
    return ", ".join(shown) + (f", … {total - limit} more" if total > limit else "")


def captured(model_name: str, method: str, *, dynamic: bool = False) -> torch.fx.GraphModule:
    model = ZOO[model_name]
    return capture(model.build(), model.inputs(), method, dynamic=dynamic).gm


def how_captured(model_name: str, method: str, *, dynamic: bool = False) -> str:
    return f"{method} of the `{model_name}` model" + (" with a symbolic batch size" if dynamic else "")


def find_node(gm: torch.fx.GraphModule, predicate, what: str) -> torch.fx.Node:
    for node in all_nodes(gm):
        if predicate(node):
            return node
    raise AssertionError(f"internal: no {what} in this graph; torch {torch.__version__} captures it differently")


def expect_node(ctx: Context, node: torch.fx.Node, expected: str | None, why: str) -> None:
    got = value(ctx.attempt.node_dialect(node))
    expect(got == expected, f"node_dialect({node_text(node)}) returned {got!r}, expected {expected!r}: {why}")


def expect_graph(ctx: Context, gm: torch.fx.GraphModule, expected: str, how: str, why: str, detail: str = "") -> None:
    """`detail`: lines shown between the reason and the graph (a generated program's description)."""
    shown = f"{detail}\n" if detail else ""
    try:
        got = value(ctx.attempt.detect_dialect(gm))
    except ValueError as exc:
        if type(exc).__name__ != "MixedDialectError":
            raise
        raise CheckFailed(f"detect_dialect on {how} raised MixedDialectError ({exc}), expected {expected!r}. Why: "
                          f"{why}.\n{shown}graph: {graph_summary(gm)}") from None
    except AttributeError as exc:
        if not re.search(r"'(Parameter|Tensor|FakeTensor)' object has no attribute", str(exc)):
            raise
        where = _attempt_location(ctx, exc) or " in detect_dialect"
        raise CheckFailed(f"your code raised AttributeError{where} on {how}: "
                          f"{exc}. A higher-order op's get_attr arguments are not all subgraphs: make_fx passes the "
                          f"weights a branch uses as get_attr tensors. Keep the GraphModules only (isinstance(attr, "
                          f"torch.fx.GraphModule)).\n{shown}graph: {graph_summary(gm)}") from None
    expect(got == expected, f"detect_dialect on {how} returned {got!r}, expected {expected!r}. Why: {why}.\n"
                            f"{shown}graph: {graph_summary(gm)}")


def expect_zoo(ctx: Context, models, method: str, expected: str, why: str, *, dynamic: bool = False,
               deep_also=()) -> None:
    """expect_graph on each zoo model captured with `method`; `deep_also` adds models that repeat a rule already
    covered, for the deep profile only (they cost capture time and teach nothing new)."""
    for name in tuple(models) + (tuple(deep_also) if ctx.deep else ()):
        how = how_captured(name, method, dynamic=dynamic)
        expect_graph(ctx, captured(name, method, dynamic=dynamic), expected, how, why)


def expect_answer(answer: str | None, expected: str | None, asked: str, why: str, graph: torch.fx.GraphModule) -> None:
    """Judge an answer a probe brought back (see probes.answer)."""
    if isinstance(answer, str) and answer.startswith("MixedDialectError"):
        raise CheckFailed(f"{asked} raised {answer}, expected {expected!r}: {why}\ngraph: {graph_summary(graph)}")
    expect(answer == expected, f"{asked} returned {answer!r}, expected {expected!r}: {why}\ngraph: {graph_summary(graph)}")


def expect_program(ctx: Context, program: tuple, expected: str, why: str, *, gm: torch.fx.GraphModule | None = None,
                   describe: str | None = None) -> None:
    """A generated program (programs.py): every node the program holds (subgraphs its higher-order ops call
    included) as the reference answers, then the graph as `expected` (the lesson's answer; "mixed" for
    MixedDialectError), asked twice: an answer must not depend on what an earlier call left behind."""
    gm = programs.program_graph(program) if gm is None else gm
    described = programs.describe_program(program) if describe is None else describe
    for node in all_nodes(gm):
        want = value(ctx.reference.node_dialect(node))
        got = value(ctx.attempt.node_dialect(node))
        expect(got == want, f"node_dialect({node_text(node)}) returned {got!r}, expected {want!r}. Why: {why}.\n"
                            f"{described}")
    how = "the program described below"
    if expected == "mixed":
        expect_mixed(ctx, gm, how, why, described)
    else:
        expect_graph(ctx, gm, expected, how, why, described)
    try:
        again = value(ctx.attempt.detect_dialect(gm))
    except ValueError as exc:
        if type(exc).__name__ != "MixedDialectError":
            raise
        again = "mixed"
    shown = {"mixed": "MixedDialectError"}
    expect(again == expected,
           f"detect_dialect answered {shown.get(expected, repr(expected))} for the program below, then "
           f"{shown.get(again, repr(again))} when asked again about the same graph object: an answer must not depend "
           f"on an earlier call. Keep nothing from one call to the next (a set of visited subgraphs kept in a default "
           f"argument or a global makes the second call skip them).\n{described}\ngraph: {graph_summary(gm)}")


# --- MixedDialectError: the exception, and the two nodes its message must name ---------------------------------

QUOTED = re.compile(r"""['"]([^'"\s]+)['"]""")


def _levels_by_name(ctx: Context, gm: torch.fx.GraphModule) -> dict[str, set[str]]:
    """node.name -> the levels ('high' or 'aten') of the nodes so named, subgraphs included."""
    levels: dict[str, set[str]] = {}
    for node in all_nodes(gm):
        dialect = value(ctx.reference.node_dialect(node))
        if dialect is not None:
            levels.setdefault(node.name, set()).add("high" if dialect in HIGH_LEVELS else "aten")
    return levels


def _expect_names_one_node_of_each_level(ctx: Context, gm: torch.fx.GraphModule, how: str, text: str) -> None:
    levels = _levels_by_name(ctx, gm)
    quoted = QUOTED.findall(text)
    named = {level for name in quoted for level in levels.get(name, ())}
    if named >= {"high", "aten"}:
        return
    high = sorted(name for name, found in levels.items() if "high" in found)
    low = sorted(name for name, found in levels.items() if "aten" in found)
    targets = {str(node.target): node.name for node in all_nodes(gm) if node.name in levels}
    hints = [f"{name!r} is a target; that node is named {targets[name]!r}" for name in quoted
             if name not in levels and name in targets]
    missing = [kind for kind, present in (("module- or torch-level", "high" in named), ("aten-level", "aten" in named))
               if not present]
    lacks = "no node of either level" if len(missing) == 2 else f"no {missing[0]} node"
    raise CheckFailed(
        f"MixedDialectError on {how} must name one node of each level by node.name, in quotes, so the reader can "
        f"find them — here one of {', '.join(map(repr, high))} and one of {', '.join(map(repr, low))}. "
        f"Your message quotes the name of {lacks}" + (f" ({'; '.join(hints)})" if hints else "") + f": {text[:300]!r}")


def expect_mixed(ctx: Context, gm: torch.fx.GraphModule, how: str, why: str, detail: str = "") -> None:
    error_type = getattr(ctx.attempt, "MixedDialectError", None)
    shown = f"\n{detail}" if detail else ""
    try:
        got = ctx.attempt.detect_dialect(gm)
    except ValueError as exc:
        if error_type is None or not isinstance(exc, error_type):
            raise CheckFailed(f"detect_dialect on {how} raised {type(exc).__name__}: {exc}; expected MixedDialectError "
                              f"because {why}{shown}") from None
        _expect_names_one_node_of_each_level(ctx, gm, how, str(exc))
        return
    raise CheckFailed(f"detect_dialect on {how} returned {value(got)!r}; expected MixedDialectError because {why}."
                      f"{shown}\ngraph: {graph_summary(gm)}")


# --- stage: nodes -----------------------------------------------------------------------------------------

@CHECKS.check(stage="nodes", weight=2)
def call_module_node_is_module(ctx):
    "a call_module node is MODULE"
    gm = captured("mlp", "symbolic_trace")
    expect_node(ctx, find_node(gm, lambda n: n.op == "call_module", "call_module node"), "module",
                "symbolic_trace keeps leaf modules as call_module nodes whose target is the submodule's name")
    gm = captured("torch_first", "symbolic_trace")
    expect_node(ctx, find_node(gm, lambda n: n.target == "block.0", "call_module block.0"), "module",
                "a module nested in a Sequential is a call_module node too (node block_0, target 'block.0')")
    gm = captured("private_names", "symbolic_trace")
    expect_node(ctx, find_node(gm, lambda n: n.target == "_fc", "call_module _fc"), "module",
                "a submodule whose name starts with an underscore is part of the model; only the call_module whose "
                "target is exactly '_guards_fn' is export's bookkeeping")


@CHECKS.check(stage="nodes", weight=1)
def structural_nodes_are_neutral(ctx):
    "placeholder, get_attr and output nodes are neutral (None)"
    for gm, how in ((captured("mlp", "make_fx"), "make_fx"), (captured("functional", "symbolic_trace"), "symbolic_trace")):
        for node in gm.graph.nodes:
            if node.op in ("placeholder", "get_attr", "output"):
                expect_node(ctx, node, None, f"{node.op} nodes appear in every dialect, so they say nothing about it ({how} graph)")


@CHECKS.check(stage="nodes", weight=2)
def torch_level_calls_are_torch(ctx):
    "torch functions, operators on tensors and tensor methods are TORCH"
    gm = captured("mlp", "dynamo")
    expect_node(ctx, find_node(gm, lambda n: n.op == "call_function", "call_function"), "torch",
                "Dynamo graphs call torch-level functions such as torch._C._nn.linear (that is what F.linear is)")
    gm = captured("pointwise", "dynamo")
    for op in (operator.mul, operator.add):
        expect_node(ctx, find_node(gm, lambda n: n.target is op, f"operator.{op.__name__}"), "torch",
                    f"`a {'*' if op is operator.mul else '+'} b` on tensors is torch-level compute: its recorded value "
                    f"(meta['example_value']) is a tensor, not a size")
    gm = captured("functional", "symbolic_trace")
    expect_node(ctx, find_node(gm, lambda n: n.op == "call_function", "call_function"), "torch",
                "symbolic_trace records no values, and a call_function without a recorded value is not shape "
                "arithmetic: F.linear is torch-level")
    gm = torch.fx.symbolic_trace(lambda x: torch.ops.aten.relu.default(x) * 2)
    expect_node(ctx, find_node(gm, lambda n: n.target is operator.mul, "operator.mul"), "torch",
                "symbolic_trace records no values: a call_function with no recorded value is torch-level, an "
                "operator.mul too (symbolic_trace of `torch.ops.aten.relu.default(x) * 2`); only a recorded size "
                "makes it neutral")
    gm = programs.unedited_graph(("chunk",), "none", "dynamo", False)
    expect_node(ctx, find_node(gm, lambda n: n.target is torch.chunk, "torch.chunk"), "torch",
                "Dynamo of `torch.cat(torch.chunk(h, 2, -1)[::-1], -1)`: torch.chunk records a tuple of two tensors "
                "(meta['example_value']), and a tuple is not a size, whatever it holds: only SymInt, SymFloat, "
                "SymBool, int, float and bool values are. Look at your size test: 'not a tensor' is not 'a size'")
    gm = captured("attention", "symbolic_trace")
    expect_node(ctx, find_node(gm, lambda n: n.op == "call_method", "call_method"), "torch",
                "a call_method node (x.softmax(...), x.transpose(...)) is a torch-level tensor method")
    gm = programs.unedited_graph(("aten",), "numel", "dynamo", True)
    expect_node(ctx, find_node(gm, lambda n: n.op == "call_method", "call_method numel"), "torch",
                "Dynamo with a symbolic batch records x.numel() as a call_method whose value is a SymInt "
                "(meta['example_value']): node_dialect answers with the first row that matches, and the call_method "
                "row comes before the size row, which is about call_function nodes. A tensor method is torch-level "
                "whatever it records")


@CHECKS.check(stage="nodes", weight=2)
def overloads_split_by_core_tag(ctx):
    "aten OpOverloads are CORE_ATEN when tagged torch.Tag.core, else ATEN"
    gm = captured("mlp", "make_fx")
    expect_node(ctx, find_node(gm, lambda n: n.target == aten.t.default, "aten.t.default"), "aten",
                "aten.t.default is an OpOverload without torch.Tag.core in its .tags")
    expect_node(ctx, find_node(gm, lambda n: n.target == aten.addmm.default, "aten.addmm.default"), "core_aten",
                "aten.addmm.default carries torch.Tag.core in its .tags")
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(lambda x: x.sum() + x.sum(dim=-1))(torch.randn(2, 3))
    expect_node(ctx, find_node(gm, lambda n: n.target == aten.sum.default, "aten.sum.default"), "aten",
                "core-ness belongs to each overload: aten.sum.default has no torch.Tag.core, although "
                "aten.sum.dim_IntList has")
    expect_node(ctx, find_node(gm, lambda n: n.target == aten.sum.dim_IntList, "aten.sum.dim_IntList"), "core_aten",
                "aten.sum.dim_IntList carries torch.Tag.core")


@CHECKS.check(stage="nodes", weight=1)
def getitem_is_neutral(ctx):
    "operator.getitem is neutral (None) wherever it appears"
    gm = captured("norm_block", "make_fx")
    expect_node(ctx, find_node(gm, lambda n: n.target is operator.getitem, "getitem"), None,
                "aten ops with several outputs (native_layer_norm, max.dim) are unpacked with operator.getitem in "
                "aten graphs")
    gm = captured("attention", "dynamo")
    expect_node(ctx, find_node(gm, lambda n: n.target is operator.getitem, "getitem"), None,
                "getitem is neutral in torch-level graphs too: here it unpacks the q, k, v of a torch-level chunk")


@CHECKS.check(stage="nodes", weight=1)
def aten_packets_are_torch(ctx):
    "a call through an aten OpOverloadPacket (torch.ops.aten.relu(x)) is TORCH"
    gm = captured("aten_packet", "symbolic_trace")
    expect_node(ctx, find_node(gm, lambda n: n.target is aten.relu, "packet aten.relu"), "torch",
                "user code called torch.ops.aten.relu, the packet: a Python call that picks its overload when it runs. "
                "Lowering tools (make_fx, export, aot_autograd) always record an OpOverload such as aten.relu.default")


@CHECKS.check(stage="nodes", weight=2)
def custom_ops_are_neutral(ctx):
    "custom ops (namespace not aten or prims), overload or packet, are neutral"
    gm = captured("fused_linear_gelu", "make_fx")
    expect_node(ctx, find_node(gm, lambda n: n.target == torch.ops.kata.linear_gelu.default, "kata.linear_gelu.default"),
                None, "a custom op is kept as it is at every level, so it says nothing about the level")
    gm = captured("fused_linear_gelu", "dynamo")
    expect_node(ctx, find_node(gm, lambda n: n.target is torch.ops.kata.linear_gelu, "packet kata.linear_gelu"), None,
                "torch-level code calls a custom op like any function (Dynamo keeps the packet kata.linear_gelu); "
                "it is still a custom op")
    gm = probes.build_graph("profiled", "make_fx")  # its profiler nodes hold objects that cannot be copied across
    node = find_node(gm, lambda n: getattr(n.target, "namespace", None) == "profiler", "profiler op")
    answers = ctx.probe(probes.probe_graph, "profiled", "make_fx", [node.name])
    expect_answer(answers["nodes"][node.name], None, f"node_dialect({node_text(node)})",
                  "torch.profiler.record_function records operators of the `profiler` namespace: not aten, so custom "
                  "ops like kata.linear_gelu", gm)


@CHECKS.check(stage="nodes", weight=1)
def higher_order_ops_are_neutral(ctx):
    "higher-order ops (cond, wrap_with_set_grad_enabled, ...) are neutral"
    gm = captured("cond_branches", "export")
    expect_node(ctx, find_node(gm, lambda n: n.target is torch.ops.higher_order.cond, "cond node"), None,
                "torch.cond becomes a HigherOrderOperator node that calls two subgraphs; the ops are inside them")
    gm = captured("no_grad_block", "export")
    node = find_node(gm, lambda n: isinstance(n.target, torch._ops.HigherOrderOperator), "wrap_with_set_grad_enabled")
    expect_node(ctx, node, None, "export puts a `torch.no_grad()` block in a subgraph called by the higher-order op "
                                 "wrap_with_set_grad_enabled (that node is named after the block's first op)")
    gm = programs.unedited_graph(("seq", ("core",), ("map", ("linear",))), "none", "export", False)
    expect_node(ctx, find_node(gm, lambda n: isinstance(n.target, torch._ops.HigherOrderOperator), "map_impl"), None,
                "torch._higher_order_ops.map is a HigherOrderOperator too (map_impl): every higher-order op is "
                "neutral, not only the ones the lesson names; recognise them with isinstance, not by name")
    gm = programs.unedited_graph(("wrap", ("core",)), "none", "dynamo", False)
    expect_node(ctx, find_node(gm, lambda n: isinstance(n.target, torch._ops.HigherOrderOperator), "wrap"), None,
                "Dynamo keeps torch._higher_order_ops.wrap.wrap as the higher-order op `wrap`: neutral like any "
                "other (isinstance(target, torch._ops.HigherOrderOperator))")


def expect_value_decides(ctx: Context, size_node: torch.fx.Node, tensor_node: torch.fx.Node, how: str) -> None:
    """Two nodes with one target, one recording a size and one a tensor: None and TORCH. Asked in both orders, so
    an answer cached by target is caught whichever node an earlier check asked first."""
    target = target_name(size_node.target)
    answers = [(node, value(ctx.attempt.node_dialect(node))) for node in (size_node, tensor_node, size_node)]
    got_size, got_tensor = answers[0][1], answers[1][1]
    if got_size == got_tensor or answers[2][1] != got_size:
        raise CheckFailed(
            f"node_dialect gave {got_size!r} for {node_text(size_node)} (recorded value: "
            f"{type(probes_value(size_node)).__name__}) and {got_tensor!r} for {node_text(tensor_node)} (recorded "
            f"value: a tensor) in {how}; expected None and 'torch'. Both call {target}: the answer depends on the "
            f"node's recorded value (meta['val'], else meta['example_value']), not on its target. Look at your "
            f"value test, and at any cache or table keyed by node.target: the same target must get different "
            f"answers here")
    expect(got_size is None and got_tensor == "torch",
           f"node_dialect({node_text(size_node)}) returned {got_size!r} and node_dialect({node_text(tensor_node)}) "
           f"returned {got_tensor!r} in {how}; expected None (a size: shape arithmetic) and 'torch' (a tensor)")


def probes_value(node: torch.fx.Node) -> object:
    return node.meta["val"] if "val" in node.meta else node.meta.get("example_value")


SIZE_KINDS = {torch.SymInt: "SymInt", torch.SymFloat: "SymFloat", torch.SymBool: "SymBool", bool: "bool", int: "int",
              float: "float"}


def _size_kind(node: torch.fx.Node) -> str | None:
    recorded = probes_value(node)
    for kind, name in SIZE_KINDS.items():  # bool before int: a bool is an int
        if type(recorded) is kind or (kind in (torch.SymInt, torch.SymFloat, torch.SymBool) and isinstance(recorded, kind)):
            return name
    return None


@CHECKS.check(stage="nodes", weight=1)
def shape_arithmetic_is_neutral(ctx):
    "a call_function that records a size (SymInt, SymFloat, SymBool, int, float, bool) is neutral, aten.sym_size.int too"
    gm = captured("split_gate", "export", dynamic=True)
    size_mul = find_node(gm, lambda n: n.target is operator.mul, "operator.mul on sizes")
    gm_dynamo = captured("split_gate", "dynamo", dynamic=True)
    tensor_mul = find_node(gm_dynamo, lambda n: n.target is operator.mul and isinstance(n.meta.get("example_value"),
                                                                                        torch.Tensor), "operator.mul on tensors")
    expect_value_decides(ctx, size_mul, tensor_mul, "export (symbolic batch) and Dynamo graphs of `split_gate`")
    dynamo_size_mul = find_node(gm_dynamo, lambda n: n.target is operator.mul and isinstance(n.meta.get("example_value"),
                                                                                             torch.SymInt), "operator.mul on sizes")
    expect_node(ctx, dynamo_size_mul, None,
                "Dynamo records the value in meta['example_value'] (the node has no 'val'): a SymInt here, so shape "
                "arithmetic")
    expect_node(ctx, find_node(gm, lambda n: n.target == aten.sym_size.int, "aten.sym_size.int"), None,
                "aten.sym_size.int reads x.shape[0] and records a SymInt: a size, and the size row comes before the "
                "aten rows (whatever the target, an aten overload too)")
    seen = set()
    for method, dynamic in (("export", True), ("dynamo", False), ("symbolic_trace_values", False)):
        graph = programs.capture_program(("core",), "all", method, dynamic)
        how = f"{method}{' with a symbolic batch b' if dynamic else ''} of `relu(x) * 2" \
              f"{programs.describe_sizes('all')}`"
        for node in graph.graph.nodes:
            kind = _size_kind(node) if node.op == "call_function" else None
            if kind is not None:
                seen.add(kind)
                expect_node(ctx, node, None, f"its recorded value is a {kind}, a size ({how}): every kind of size "
                                             f"counts, SymInt, SymFloat, SymBool and plain int, float, bool")
    assert seen >= set(SIZE_KINDS.values()), f"internal: torch {torch.__version__} recorded only {sorted(seen)}"
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(lambda x: x * x.sum().item() + x.numel(), tracing_mode="symbolic")(torch.randn(3, 4))
    for target in (aten._local_scalar_dense.default, aten.sym_numel.default):
        node = find_node(gm, lambda n: n.target == target, str(target))
        expect_node(ctx, node, None, f"make_fx(tracing_mode='symbolic') of `x * x.sum().item() + x.numel()` records a "
                                     f"{_size_kind(node)} for {target}: a size, whatever the target")
    for meta, expected, why in (
            ({"val": None, "example_value": 4}, "torch", "its meta has 'val' (None: no value recorded) and "
             "'example_value' 4: a 'val' that is present decides, even None, and None is not a size"),
            ({"example_value": 4}, None, "its meta has no 'val' and 'example_value' 4: a plain int, a size")):
        node = find_node(torch.fx.symbolic_trace(lambda x: x * x.shape[0]), lambda n: n.target is operator.mul, "mul")
        node.meta.update(meta)
        expect_node(ctx, node, expected, why)


@CHECKS.check(stage="nodes", weight=1)
def mode_switches_are_neutral(ctx):
    "grad-mode and autocast switches are neutral"
    gm = captured("no_grad_block", "make_fx_pre_dispatch")
    expect_node(ctx, find_node(gm, lambda n: n.target is torch._C._set_grad_enabled, "torch._C._set_grad_enabled"), None,
                "make_fx(pre_dispatch=True) records `with torch.no_grad():` as torch._C._set_grad_enabled calls: a "
                "mode switch for the ops after it, not a computation")
    gm = captured("autocast_block", "make_fx_pre_dispatch")
    for switch in (torch.amp.autocast_mode._enter_autocast, torch.amp.autocast_mode._exit_autocast):
        expect_node(ctx, find_node(gm, lambda n: n.target is switch, switch.__name__), None,
                    f"`with torch.autocast(...)` is recorded as {switch.__name__} calls: mode switches")


# --- stages: module, torch, aten, core_aten: whole graphs from every capture -------------------------------

@CHECKS.check(stage="module", weight=3)
def symbolic_trace_of_modules_is_module(ctx):
    "symbolic_trace of nn.Module models is MODULE, whatever comes before or after the module calls"
    expect_zoo(ctx, ("mlp", "residual", "norm_block", "attention", "torch_first", "private_names"), "symbolic_trace",
               "module", "one call_module node makes the graph MODULE; torch.relu, tanh or x.softmax() before or after "
               "it (and however many of them) do not change that, nor does the submodule's name (`_fc`, `Act`)")


@CHECKS.check(stage="module", weight=2)
def module_graphs_with_custom_ops_and_packets_are_module(ctx):
    "module graphs that call a custom op or an aten packet are MODULE"
    expect_zoo(ctx, ("fused_linear_gelu",), "symbolic_trace", "module",
               "kata.linear_gelu is a custom op: neutral, so the module calls decide")
    expect_zoo(ctx, ("aten_packet",), "symbolic_trace", "module",
               "torch.ops.aten.relu called through its packet is torch-level, which a module graph may hold")


@CHECKS.check(stage="torch", weight=3)
def dynamo_graphs_are_torch(ctx):
    "Dynamo graphs are TORCH"
    expect_zoo(ctx, ("mlp", "norm_block", "attention"), "dynamo", "torch", deep_also=("residual", "pointwise"),
               why="Dynamo inlines modules: the graph calls torch functions and methods, parameters are placeholders")


@CHECKS.check(stage="torch", weight=2)
def dynamo_graphs_with_custom_ops_cond_and_symbolic_sizes_are_torch(ctx):
    "Dynamo graphs with a custom op, torch.cond or a symbolic batch are TORCH"
    expect_zoo(ctx, ("fused_linear_gelu",), "dynamo", "torch",
               "the custom op kata.linear_gelu is neutral; F.linear and + around it are torch-level")
    expect_zoo(ctx, ("split_gate",), "dynamo", "torch", dynamic=True,
               why="the SymInt placeholders and the size arithmetic are neutral; reshape, chunk and relu are torch-level")
    expect_zoo(ctx, ("cond_branches",), "dynamo", "torch",
               "the cond node is neutral and its branch subgraphs call torch-level functions")


@CHECKS.check(stage="torch", weight=2)
def dynamo_export_graphs(ctx):
    "torch._dynamo.export graphs are TORCH, also when they read a size with aten.sym_size.int"
    if ctx.deep:  # the fuzz captures with torch._dynamo.export too
        expect_program(ctx, ("program", ("seq", ("core",), ("linear",)), "none", "dynamo_export", False, "none"),
                       "torch", "torch._dynamo.export is Dynamo: torch-level calls (relu, mul, linear), parameters as "
                                "get_attr")
    expect_program(ctx, ("program", ("linear",), "int", "dynamo_export", True, "none"), "torch",
                   "torch._dynamo.export reads x.shape[0] with aten.sym_size.int, which records a SymInt. A "
                   "call_function that records a size is shape arithmetic, neutral whatever its target (the size row "
                   "comes before the aten rows). So linear, the other ops, decide: torch-level, TORCH")


@CHECKS.check(stage="torch", weight=2)
def symbolic_trace_of_functional_code_is_torch(ctx):
    "symbolic_trace of functional code is TORCH"
    expect_zoo(ctx, ("functional", "pointwise"), "symbolic_trace", "torch",
               "a forward written with torch.nn.functional has no leaf modules to call")

    def plain_function(x, w):
        return torch.nn.functional.gelu(x @ w).sum(dim=-1)

    expect_graph(ctx, torch.fx.symbolic_trace(plain_function), "torch", "symbolic_trace of a plain function",
                 "operator.matmul, F.gelu and .sum() are torch-level")
    expect_graph(ctx, torch.fx.symbolic_trace(lambda x: torch.ops.aten.relu(x).sin()), "torch",
                 "symbolic_trace of `torch.ops.aten.relu(x).sin()`",
                 "a call through the packet torch.ops.aten.relu is torch-level, like the .sin() after it")


@CHECKS.check(stage="aten", weight=3)
def make_fx_export_aot_graphs_are_aten(ctx):
    "make_fx, export and aot_autograd graphs of Linear models are ATEN"
    for method in ("make_fx_pre_dispatch", "export", "make_fx", "aot_autograd"):
        expect_zoo(ctx, ("mlp", "attention"), method, "aten", deep_also=("mlp_3d",),
                   why="aten.linear (pre-dispatch, export) and aten.t (make_fx, aot_autograd) are not core ATen ops")


@CHECKS.check(stage="aten", weight=2)
def symbolic_batch_graphs_are_aten(ctx):
    "export and aot_autograd with a symbolic batch size are ATEN"
    expect_zoo(ctx, ("split_gate",), "export", "aten", dynamic=True, deep_also=("attention",),
               why="export with a Dim computes sizes with aten.sym_size.int and operator.mul, both recording SymInts: "
                   "shape arithmetic is neutral, and aten.reshape / aten.linear are not core")
    expect_zoo(ctx, ("mlp_3d",), "aot_autograd", "aten", dynamic=True,
               why="aot_autograd with dynamic=True multiplies SymInt sizes with operator.mul; aten.t is not core")


@CHECKS.check(stage="aten", weight=3)
def control_flow_and_no_grad_graphs_are_aten(ctx):
    "graphs with torch.cond, no_grad or autocast blocks are ATEN (subgraphs count)"
    expect_zoo(ctx, ("cond_branches",), "export", "aten",
               "the top-level graph holds only core ops (amax, gt), the cond node and a getitem; the branch subgraphs "
               "the cond node calls hold aten.linear, which is not core — and subgraphs count")
    expect_zoo(ctx, ("no_grad_block",), "export", "aten",
               "the no_grad block is a subgraph of wrap_with_set_grad_enabled holding aten.linear (not core); outside "
               "it only relu and add (core). The get_attr node that fetches the subgraph is named differently from "
               "its target: look subgraphs up by node.target")
    expect_zoo(ctx, ("cond_branches",), "make_fx", "aten", "make_fx keeps torch.cond; its branches hold aten.t (not core)")
    expect_zoo(ctx, ("no_grad_block", "autocast_block"), "make_fx_pre_dispatch", "aten",
               "the grad-mode and autocast switches are neutral; aten.linear is not core")
    expect_zoo(ctx, ("autocast_block",), "export", "aten",
               "wrap_with_autocast is a higher-order op; its subgraph holds aten.linear (not core)")


@CHECKS.check(stage="aten", weight=3)
def every_subgraph_of_every_higher_order_op_counts(ctx):
    "every subgraph a higher-order op calls counts: both cond branches, nested ops at any depth, map's body"
    cases = [
        (("cond", ("cond", ("core",), ("linear",)), ("core",)),
         "aten.linear sits only in the false branch (false_graph_0) of a cond inside the true branch of another: a "
         "higher-order op calls every subgraph among its arguments, subgraphs hold higher-order ops in turn, and a "
         "nested get_attr names an attribute of the subgraph that holds it (true_graph_0 of the outer branch), not "
         "of the root"),
        (("seq", ("core",), ("map", ("linear",))),
         "map's body subgraph holds aten.linear: every higher-order op's subgraphs count, not only cond's and the "
         "lesson's list"),
        (("seq", ("core",), ("scan", ("linear",))),
         "scan's combine subgraph (scan_combine_graph_0) holds aten.linear: every HigherOrderOperator calls its "
         "subgraphs, scan too, whether or not the lesson names it. Walk the subgraphs of every higher-order op "
         "node (isinstance(node.target, torch._ops.HigherOrderOperator)), not of a list of names")]
    if ctx.deep:
        cases += [
            (("cond", ("core",), ("linear",)), "only the false branch (false_graph_0) holds aten.linear, not core"),
            (("cond", ("core",), ("no_grad", ("cond", ("core",), ("linear",)))),
             "three levels deep: the graph's cond, a no_grad block in its false branch, a cond inside that")]
    for body, why in cases:
        method = "make_fx" if body[-1][0] == "scan" else "export"  # make_fx keeps scan too, at a fifth of the cost
        expect_program(ctx, ("program", body, "none", method, False, "none"), "aten", why)


@CHECKS.check(stage="aten", weight=2)
def subgraphs_inside_tuple_arguments_count(ctx):
    "a subgraph a higher-order op takes inside a tuple or as a keyword argument counts (flex_attention, cond)"
    expect_program(ctx, ("program", ("cond", ("core",), ("linear",)), "none", "export", False,
                         "subgraphs_as_keywords"), "aten",
                   "the cond node takes its branches as keyword arguments (true_fn=, false_fn=): they are still "
                   "subgraphs it calls, and the false branch holds aten.linear, not core. A higher-order op's "
                   "subgraphs can sit anywhere among its arguments, kwargs included (node.all_input_nodes lists "
                   "every node in args and kwargs)")
    cases = programs.FLEX_CASES if ctx.deep else (("core", "not_core", "make_fx"),)
    for score, mask, method in cases:
        expected = "aten" if mask == "not_core" else "core_aten"
        why = ("the flex_attention node takes score_mod's subgraph as a direct argument and mask_mod's inside its "
               "block-mask tuple; the top level holds only that node and getitems, so the two subgraphs decide, and "
               f"mask_mod's {'aten.floor_divide is not core' if mask == 'not_core' else 'ops are all core'}. A "
               "higher-order op's subgraphs can sit anywhere among its arguments: inside tuples and lists, or as "
               "keyword arguments (node.all_input_nodes lists them all)")
        expect_program(ctx, ("flex", score, mask, method), expected, why, gm=programs.flex_graph(score, mask, method),
                       describe=programs.describe_flex(score, mask, method))


FUNCTORCH_WHY = ("torch.export records a functorch transform in forward (torch.vmap, which create_block_mask calls; "
                 "torch.func.jvp) as calls to functions of torch._functorch.predispatch ({names}) around the aten ops "
                 "they wrap: transform bookkeeping that wraps and unwraps tensors and computes nothing, neutral like the "
                 "mode switches (recognise them by target.__module__, not by a list of names). So the aten ops "
                 "decide{ops}")


FUNCTORCH_SHORT = ("(The graph is export's record of a functorch transform: its torch._functorch.predispatch calls "
                   "are transform bookkeeping, neutral, and the aten ops beside them decide.)")
SIZE_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)


def _recorded_kind(recorded: object) -> str:
    if recorded is None:
        return "no value (None)"
    if isinstance(recorded, (tuple, list)):
        return f"a {type(recorded).__name__} of {len(recorded)} values"
    if isinstance(recorded, torch.Tensor):
        return "a tensor"
    return f"a {type(recorded).__name__}"


def node_rule(node: torch.fx.Node) -> str:
    """The lesson's row for one node, as the cause a failing message leads with: what the node records and what the
    rule says for it (the check gives the expected answer)."""
    if node.op != "call_function":
        return f"a {node.op} node"
    target, meta = node.target, node.meta
    key = "val" if "val" in meta else "example_value" if "example_value" in meta else None
    recorded = meta[key] if key else None
    records = f"it records {_recorded_kind(recorded)} (meta[{key!r}])" if key else "it records no value"
    if isinstance(recorded, SIZE_TYPES):
        return f"{records}: a size, so it is shape arithmetic, neutral whatever its target"
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        space = target.namespace if isinstance(target, torch._ops.OpOverload) else \
            target._qualified_op_name.split("::")[0]
        if space not in ("aten", "prims"):
            return f"{target} is a custom op (namespace {space!r}, not aten or prims): neutral"
        if isinstance(target, torch._ops.OpOverloadPacket):
            return f"{target} is a packet (no overload chosen): torch-level"
        core = torch.Tag.core in target.tags
        return (f"{records}, and that is not a size, so {target} is an aten overload like any other: aten-level, and "
                f"{'core' if core else 'not core'} because torch.Tag.core is {'' if core else 'not '}in its tags")
    if getattr(target, "__module__", None) == "torch._functorch.predispatch":
        return "it calls a function of torch._functorch.predispatch: transform bookkeeping, neutral"
    return f"{records}, not a size"


@CHECKS.check(stage="aten", weight=2)
def functorch_bookkeeping_is_neutral(ctx):
    "export of torch.vmap, torch.func.jvp or create_block_mask in forward: torch._functorch.predispatch calls are neutral"
    cases = [("vmap_core", "export", "core_aten", ": relu, mul and add are core"),
             ("jvp", "export", "aten", ": aten._make_dual, aten._unpack_dual and aten.ones_like are not core"),
             ("block_mask", "export", "aten", ": aten.arange, aten.index_put_, aten._assert_tensor_metadata, ... are "
                                             "not core")]
    if ctx.deep:
        cases += [("vmap_linear", "export", "aten", ": aten.linear is not core"),
                  ("vmap_linear", "dynamo", "torch", ", with Dynamo's torch-level calls beside them: TORCH"),
                  ("block_mask", "dynamo", "torch", ", with Dynamo's torch-level calls beside them: TORCH")]
    for case, method, expected, ops in cases:
        gm = programs.functorch_graph(case, method)  # the probe builds its own: vmap's meta cannot be copied across
        names = sorted({node.target.__name__ for node in all_nodes(gm)
                        if getattr(node.target, "__module__", None) == "torch._functorch.predispatch"})
        why = FUNCTORCH_WHY.format(names=", ".join(names), ops=ops)
        described = programs.describe_functorch(case, method)
        answers = ctx.probe(probes.probe_functorch, case, method)
        for path, graph_module in gm.named_modules():
            if not isinstance(graph_module, torch.fx.GraphModule):
                continue
            for node in graph_module.graph.nodes:
                want = value(ctx.reference.node_dialect(node))
                got = answers["nodes"][f"{path}/{node.name}" if path else node.name]
                if got == want:
                    continue
                bookkeeping = getattr(node.target, "__module__", None) == "torch._functorch.predispatch"
                # lead with this node's own rule; the bookkeeping story only in full when the node is bookkeeping
                reason = f"{node_rule(node)}. {why if bookkeeping else FUNCTORCH_SHORT}"
                expect_answer(got, want, f"node_dialect({node_text(node)})", f"{reason}\n{described}", gm)
        expect_answer(answers["graph"], expected, "detect_dialect on the graph described below",
                      f"{why}.\n{described}", gm)
        expect_answer(answers["again"], expected, "detect_dialect asked a second time about the same graph object",
                      f"an answer must not depend on an earlier call.\n{described}", gm)


@CHECKS.check(stage="aten", weight=1)
def prims_graphs_are_aten(ctx):
    "prims ops are aten-level and never core: a graph of prims is ATEN"
    from torch._decomp import decomposition_table
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(lambda x: torch.nn.functional.gelu(x).var(dim=-1),
                 decomposition_table=decomposition_table)(torch.randn(2, 3))
    expect_node(ctx, find_node(gm, lambda n: getattr(n.target, "namespace", None) == "prims", "prims op"), "aten",
                "prims ops are PyTorch's own IR below ATen (torch.compiler_ir), not custom ops; none is tagged core")
    expect_graph(ctx, gm, "aten", "make_fx of F.gelu(x).var(-1) with torch._decomp.decomposition_table",
                 "every op is a prims op: aten-level, not core")


@CHECKS.check(stage="core_aten", weight=3)
def decomposed_exports_are_core_aten(ctx):
    "run_decompositions() graphs are CORE_ATEN, with a custom op or a symbolic batch too"
    expect_zoo(ctx, ("mlp",), "export_core", "core_aten", deep_also=("attention", "residual"),
               why="run_decompositions() lowers these models' ops to the core ATen set: each target has torch.Tag.core")
    expect_zoo(ctx, ("split_gate",), "export_core", "core_aten", dynamic=True,
               why="aten.sym_size.int and operator.mul record SymInt sizes: shape arithmetic, neutral; the tensor "
                   "ops are core")
    expect_zoo(ctx, ("fused_linear_gelu",), "export_core", "core_aten",
               "every aten op is core; the custom op kata.linear_gelu rides along (neutral)")
    expect_zoo(ctx, (), "export_core", "core_aten", deep_also=("cond_branches",),
               why="the predicate and both branch subgraphs hold core ops only")


@CHECKS.check(stage="core_aten", weight=2)
def dialect_is_about_content_not_tool(ctx):
    "make_fx of core ops only is CORE_ATEN, custom ops riding along"
    expect_zoo(ctx, ("pointwise",), "make_fx", "core_aten",
               "the dialect is decided by the graph's ops, not by the tool: relu, mul and add are all core ATen")
    from torch.fx.experimental.proxy_tensor import make_fx

    def fused(x, w, b):
        return torch.relu(torch.ops.kata.linear_gelu(x, w, b))

    gm = make_fx(fused)(torch.randn(2, 4), torch.randn(3, 4), torch.randn(3))
    expect_graph(ctx, gm, "core_aten", "make_fx of relu(kata.linear_gelu(x, w, b))",
                 "the only aten op, relu, is core; the custom op kata.linear_gelu is neutral")
    answers = ctx.probe(probes.probe_graph, "profiled", "make_fx", [])
    expect_answer(answers["graph"], "core_aten", "detect_dialect on make_fx of the `profiled` model",
                  "relu and mul are core; the profiler's record_function ops are custom ops (namespace `profiler`)",
                  probes.build_graph("profiled", "make_fx"))


@CHECKS.check(stage="core_aten", weight=2)
def core_means_the_core_tag(ctx):
    "core means torch.Tag.core on the overload, not what run_decompositions() leaves"
    gm = captured("split_gate", "export")
    expect_node(ctx, find_node(gm, lambda n: n.target == aten.chunk.default, "aten.chunk.default"), "aten",
                "aten.chunk.default has no torch.Tag.core (nor a decomposition in export's default table)")
    expect_graph(ctx, gm, "aten", how_captured("split_gate", "export"),
                 "aten.reshape and aten.chunk are not tagged core, although export's default decomposition table "
                 "has no entry for either")
    expect_zoo(ctx, ("autocast_block",), "export_core", "aten",
               "run_decompositions() keeps aten._assert_tensor_metadata here (no node reads it, and every node counts, "
               "read or not), and it is not tagged core: the tag decides, not the tool that made the graph")


# --- stage: edge_cases ----------------------------------------------------------------------------------

@CHECKS.check(stage="edge_cases", weight=2)
def getitem_does_not_mix_levels(ctx):
    "aten graphs with operator.getitem are not mixed"
    gm = captured("norm_block", "make_fx")
    not_core = sorted({target_name(n.target) for n in all_nodes(gm) if value(ctx.reference.node_dialect(n)) == "aten"})
    try:
        got = value(ctx.attempt.detect_dialect(gm))
    except ValueError as exc:
        if type(exc).__name__ != "MixedDialectError":
            raise
        got = "mixed"
    why = ("operator.getitem unpacks native_layer_norm's and max's outputs; it is neutral, not torch-level"
           if got in ("mixed", "torch") else
           f"getitem is neutral here, so the aten ops decide, and {', '.join(not_core)} {'is' if len(not_core) == 1 else 'are'} "
           f"not core: one aten-level op that is not core makes the graph ATEN")
    expect_graph(ctx, gm, "aten", "make_fx of `norm_block` (LayerNorm, max)", why)
    expect_zoo(ctx, (), "export_core", "core_aten", deep_also=("norm_block",),
               why="getitem nodes are neutral, so the remaining ops (all core) decide")


@CHECKS.check(stage="edge_cases", weight=1)
def graph_without_ops_is_torch(ctx):
    "a graph where no node shows a level is TORCH"
    expect_graph(ctx, torch.fx.symbolic_trace(lambda x: x), "torch", "symbolic_trace of `lambda x: x`",
                 "the lesson's rule for a graph with nothing to go on: TORCH, what plain Python code traces to")
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(lambda x, w, b: torch.ops.kata.linear_gelu(x, w, b))(torch.randn(2, 4), torch.randn(3, 4), torch.randn(3))
    expect_graph(ctx, gm, "torch", "make_fx of `kata.linear_gelu(x, w, b)` alone",
                 "its only op is a custom op, which is neutral: nothing says which level, so the rule for a graph "
                 "with nothing to go on applies")


@CHECKS.check(stage="edge_cases", weight=2)
def export_module_guards_fn_is_neutral(ctx):
    "ep.module()'s _guards_fn call_module is neutral"
    gm = probes.build_graph("mlp", "ep.module")  # ep.module() cannot be copied across: the probe builds its own
    guards = find_node(gm, lambda n: n.op == "call_module" and n.target == "_guards_fn", "_guards_fn node")
    answers = ctx.probe(probes.probe_graph, "mlp", "ep.module", [guards.name])
    expect_answer(answers["nodes"][guards.name], None, f"node_dialect({node_text(guards)})",
                  "export's unlifted module calls _guards_fn to check inputs: bookkeeping, not the model", gm)
    expect_answer(answers["graph"], "aten", "detect_dialect on torch.export.export(mlp).module()",
                  "apart from _guards_fn it is the export graph (aten.linear is not core)", gm)


@CHECKS.check(stage="edge_cases", weight=2)
def only_the_subgraphs_higher_order_ops_call_count(ctx):
    "subgraphs left behind by a pass do not count, an unread higher-order op's do; a partition call is MODULE"
    expect_program(ctx, ("program", ("cond", ("core",), ("linear",)), "none", "export", False, "unread_hops"),
                   "aten", "a pass made the graph return its input and erased what nothing read, but kept the cond "
                   "node: no node reads its result, yet it is still in the graph and still calls both branches, and "
                   "the false one holds aten.linear, not core. Every node counts, read or not, and so do the "
                   "subgraphs it calls; only a higher-order op node that is gone leaves its branches behind")
    expect_program(ctx, ("program", ("no_grad", ("linear",)), "none", "export", False, "dead_subgraphs"), "torch",
                   "a pass removed the no_grad block's wrap_with_set_grad_enabled node: its subgraph stays an attribute "
                   "of the GraphModule, but no higher-order op calls it any more, so it is not part of the program; "
                   "nothing left shows a level. Walk the subgraphs higher-order op nodes call, not gm.modules()")
    expect_program(ctx, ("program", ("no_grad", ("linear",)), "none", "export", False, "unread_get_attrs"),
                   "torch", "a pass erased the wrap_with_set_grad_enabled node without eliminate_dead_code(): the "
                   "get_attr node that fetched its subgraph is still in the graph, but no node reads it, so no "
                   "higher-order op calls that subgraph and it is not part of the program. A subgraph counts when a "
                   "higher-order op node takes it as an argument, not when a get_attr node fetches it")
    if ctx.deep:
        expect_program(ctx, ("program", ("cond", ("core",), ("linear",)), "none", "export", False, "dead_subgraphs"),
                       "torch", "a pass removed the cond: its branches stay attributes, called by no node")
    expect_program(ctx, ("program", ("core",), "none", "make_fx", False, "partitioned"), "module",
                   "the partitioner moved every op into a GraphModule called by a call_module node (fused_0): a "
                   "module call, MODULE; the partition's own graph is not a subgraph a higher-order op calls")


@CHECKS.check(stage="edge_cases", weight=2)
def module_and_aten_nodes_raise_mixed(ctx):
    "module calls beside an aten OpOverload: MixedDialectError naming one node of each"
    expect_mixed(ctx, captured("half_lowered", "symbolic_trace"),
                 "symbolic_trace of `half_lowered` (aten.max.dim, getitem, then self.block = Sequential(Linear, ReLU))",
                 "node max_dim calls the aten overload aten.max.dim while block_0 and block_1 call modules")


@CHECKS.check(stage="edge_cases", weight=2)
def torch_and_aten_nodes_raise_mixed(ctx):
    "torch-level calls beside an aten OpOverload: MixedDialectError naming one of each"

    def lowered_then_torch(x):
        return torch.sigmoid(torch.ops.aten.max.dim(x, -1)[0]).sum()

    expect_mixed(ctx, torch.fx.symbolic_trace(lowered_then_torch),
                 "symbolic_trace of `torch.sigmoid(torch.ops.aten.max.dim(x, -1)[0]).sum()`",
                 "max_dim calls an aten overload while sigmoid and sum_1 are torch-level (a getitem sits between them)")
    expect_mixed(ctx, torch.fx.symbolic_trace(lambda x: torch.ops.aten.relu.default(x) * 2),
                 "symbolic_trace of `torch.ops.aten.relu.default(x) * 2`",
                 "relu_default calls an aten overload while mul (operator.mul, no recorded value) is torch-level")
    expect_mixed(ctx, captured("half_lowered", "dynamo"), how_captured("half_lowered", "dynamo"),
                 "user code calls the aten overload aten.max.dim, which Dynamo keeps beside torch-level linear and relu "
                 "(max.dim records a tuple of two tensors: a tuple is not a size, so it is aten-level)")


@CHECKS.check(stage="edge_cases", weight=1)
def mixed_levels_across_subgraphs_raise_mixed(ctx):
    "levels mixed across a graph and its cond subgraphs: MixedDialectError"
    expect_mixed(ctx, captured("cond_half_lowered", "dynamo"), how_captured("cond_half_lowered", "dynamo"),
                 "the top-level graph is torch-level (x.sum() > 0) and the true branch's subgraph calls aten.sin.default: "
                 "the graph and its subgraphs are one program, judged together")


NESTED_HOW = ("torch.cond(h.amax() > 0, [torch.cond(h.amax() > 0, [relu(h) * 2], [Linear(h)])], [Linear(h)]): "
              "aten.t + aten.addmm only in the outer false branch (false_graph_0, depth 1) and in the inner false branch "
              "(true_graph_0.false_graph_0, depth 2)")


@CHECKS.check(stage="edge_cases", weight=2)
def answers_for_the_graph_as_it_is_now(ctx):
    "after a pass rewrites a graph in place, the answers follow the new graph"
    answers = ctx.probe(probes.probe_rewrite_in_place, "mlp")
    before = probes.build_graph("mlp", "make_fx")
    node = answers["node"]
    expect_answer(answers["before"]["node"], "aten",
                  f"before any rewrite, node_dialect({node} (call_function aten.t.default))",
                  "aten.t.default is not core (this first answer comes before the pass: no cache is involved yet)",
                  before)
    expect_answer(answers["before"]["graph"], "aten", "before any rewrite, detect_dialect on make_fx of `mlp`",
                  "aten.t is not core, so ATEN (this first answer comes before the pass: no cache is involved yet)",
                  before)
    after = probes.build_graph("mlp", "make_fx")
    probes.rewrite_transposes(after)
    how = f"the same graph object after a pass rewrote {', '.join(answers['rewritten'])} in place into aten.permute"
    expect_answer(answers["after"]["node"], "core_aten",
                  f"node_dialect({node}) on the same node object, now calling aten.permute.default,",
                  "a pass changed node.target in place; aten.permute.default is core. Answer for the node as it is "
                  "now, not from a cache keyed by the node", after)
    expect_answer(answers["after"]["graph"], "core_aten", f"detect_dialect on {how}",
                  "every op in it is core now. Answer for the graph as it is, not from a cache keyed by the "
                  "GraphModule", after)
    answers = ctx.probe(probes.probe_rewrite_in_place, "mlp", False)
    expect_answer(answers["after"]["graph"], "core_aten",
                  f"detect_dialect on {how.replace('in place', 'in place without gm.recompile()')}",
                  "every op in it is core now; gm.code still shows aten.t, since only recompile() rewrites it. "
                  "Answer from the nodes as they are, not from a cache keyed by gm.code or anything else", after)
    # the same inside subgraphs: a pass rewrites a cond branch's nodes in place, at depth 1 and 2
    nested_how = f"make_fx of {NESTED_HOW}"
    for recompile in ((False, True) if ctx.deep else (False,)):
        answers = ctx.probe(probes.probe_rewrite_subgraphs, recompile)
        if answers["before"] != "aten":
            expect_answer(answers["before"], "aten", f"before any rewrite, detect_dialect on {nested_how},",
                          "aten.t is not core, and every subgraph a higher-order op calls counts (this first answer "
                          "comes before the pass: no cache is involved yet)", probes.nested_linears_graph())
        if answers["after"] == "core_aten":
            continue
        probes.rewrite_transposes(nested_after := probes.nested_linears_graph(), recompile)
        expect_answer(answers["after"], "core_aten",
                      f"detect_dialect on the same graph object after a pass rewrote {', '.join(answers['rewritten'])} "
                      f"in place into aten.permute{'' if recompile else ' without recompile()'} ({nested_how})",
                      "every op in it is core now. Passes rewrite the nodes inside subgraphs in place too: the same "
                      "branch GraphModules, the same Node objects, a new node.target. Read every subgraph's nodes on "
                      "every call; an answer remembered per subgraph (by id, by object or by its code) goes stale",
                      nested_after)


VALUE_KEYS = ("val", "example_value", "tensor_meta")  # what the captures record a node's value under


def _expect_graph_untouched(answers: dict, how: str, also: str = "", who: str = "detect_dialect") -> None:
    """`answers` from probes.probe_unread_nodes / probe_retargeted: the module's state (probes.graph_snapshot)
    before and after the call, and (probe_retargeted) what gm(x) computed before and after it."""
    before, after = answers["before"], answers["after"]
    ran = "ran_before" in answers and answers["ran_before"] != answers["ran_after"]
    if before == after and not ran:
        return
    changes = [f"{what}: {'added' if what not in before else 'removed' if what not in after else 'changed'}"
               for what in list(before) + [what for what in after if what not in before]
               if before.get(what) != after.get(what)]
    shown = "; ".join(changes[:6]) + (f"; and {len(changes) - 6} more" if len(changes) > 6 else "")
    meta = any("meta[" in change for change in changes)
    code = any("generated code" in change or "the forward it runs" in change for change in changes)
    advice = []
    if meta:
        advice.append("Meta: node.meta and gm.meta belong to the graph too: passes downstream read 'val', "
                      "'stack_trace' and 'nn_module_stack' from it, so add, remove or replace no key, not even a note "
                      "of your own")
    value_keys = [change for change in changes if any(f"meta[{key!r}]" in change for key in VALUE_KEYS)]
    if value_keys:
        held = answers.get("keys_before", {})
        shown_held = "; ".join(f"{label.split(': ', 1)[-1]} held {keys}" for label, keys in list(held.items())[:2])
        advice.append("Each capture records a node's value under its own key: Dynamo (torch.compile, "
                      "torch._dynamo.export) under 'example_value' and no 'val'; export, make_fx and aot_autograd "
                      "under 'val' (and 'tensor_meta'); symbolic_trace under none (FakeTensorProp adds 'val'). Read whichever key is there; do "
                      "not copy one into the other or fill in a missing one: a pass downstream takes a 'val' to mean "
                      "that export or make_fx recorded it"
                      + (f" (before your call, {shown_held})" if shown_held else ""))
    if code or ran:
        advice.append("Code: gm.code and the forward the caller runs change only when the caller recompiles "
                      "(recompile() makes a new forward even when the code comes out the same, and setting gm.graph recompiles): "
                      "a pass halfway through has retargeted nodes without recompiling yet, and after your call gm(x) "
                      "must compute what it computed before" + (" — here it does not" if ran else ""))
    raise CheckFailed(
        f"{who} changed the module it was asked about ({how}): {shown or 'what gm(x) computes'}. "
        f"{who} only reads: the graph belongs to the caller, who may be halfway through a pass, and it must "
        f"find everything as it left it: the nodes of the graph and its subgraphs, their meta, the module's "
        f"attributes and submodules, its code. Do not run eliminate_dead_code(), recompile(), lint or any pass on it, "
        f"nor on its subgraphs, and set nothing on them" + "".join(f". {line}" for line in advice)
        + also)


@CHECKS.check(stage="edge_cases", weight=2)
def unread_nodes_count_and_the_graph_is_left_alone(ctx):
    "nodes no other node reads still count, in subgraphs too; detect_dialect leaves the graph as it found it"
    top = probes.unread_node_graph("top")
    how = "symbolic_trace of `torch.ops.aten.relu.default(x); return x.sin()` (the relu's result is read by no node)"
    answers = ctx.probe(probes.probe_unread_nodes, "top")
    got = answers["graph"]
    if not (isinstance(got, str) and got.startswith("MixedDialectError")):
        _expect_graph_untouched(answers, how, f". And it answered {got!r} where MixedDialectError was expected: "
                                              f"relu_default counts, read or not")
        raise CheckFailed(
            f"detect_dialect on {how} returned {got!r}; expected MixedDialectError because relu_default calls an aten "
            f"overload while sin (.sin()) is torch-level. relu_default is read by no node, but it is still a node of "
            f"the graph, and every node counts, read or not: a pass that has not run eliminate_dead_code() yet leaves "
            f"such nodes, and they are part of what it hands you.\ngraph: {graph_summary(top)}")
    _expect_names_one_node_of_each_level(ctx, top, how, got.split(": ", 1)[1])
    _expect_graph_untouched(answers, how)
    sub = probes.unread_node_graph("subgraph")
    how = ("make_fx of torch.cond(h.amax() > 0, [relu(h) * 2], [relu(h) * 2]) (core ops only), then a pass added an "
           "aten.t.default node that no node reads to the true branch (true_graph_0)")
    answers = ctx.probe(probes.probe_unread_nodes, "subgraph")
    expect_answer(answers["graph"], "aten", f"detect_dialect on {how}",
                  "aten.t.default is not core, and a node nobody reads is still a node of the subgraph: every node "
                  "of every subgraph a higher-order op calls counts, read or not", sub)
    _expect_graph_untouched(answers, how)
    how = ("make_fx of `relu(x) * 2`, whose relu node a pass has just retargeted to aten.square.default in place, "
           "without recompiling yet (gm.code still shows relu, and gm(-ones) still gives zeros)")
    answers = ctx.probe(probes.probe_retargeted, "top")
    _expect_graph_untouched(answers, how)
    if ctx.deep:
        how = (f"make_fx of {NESTED_HOW}, after a pass rewrote the aten.t nodes of both false branches in place into "
               f"aten.permute without recompiling them yet")
        _expect_graph_untouched(ctx.probe(probes.probe_retargeted, "subgraph"), how)
    # every capture the lesson teaches, subgraphs of higher-order ops included: each records its own meta keys
    for answers in ctx.probe(probes.probe_left_alone, probes.left_alone_cases(ctx.deep)):
        if answers["before"] or answers["after"]:
            body, sizes, method, dynamic = answers["case"]
            how = (f"{LEFT_ALONE_CAPTURE_TEXT.get(method, method)}{' with a symbolic batch size' if dynamic else ''} "
                   f"of h = {programs.describe_body(_tuple_body(body))}; return h{programs.describe_sizes(sizes)} "
                   f"(b = x.shape[0]), "
                   f"after node_dialect was asked of every node (subgraphs too) and detect_dialect of the graph")
            _expect_graph_untouched(answers, how, who="node_dialect or detect_dialect")


LEFT_ALONE_CAPTURE_TEXT = {"symbolic_trace_values": "symbolic_trace then FakeTensorProp (which adds meta['val'])",
                           "dynamo_export": "torch._dynamo.export"}


def _tuple_body(body) -> tuple:
    """A program body that came back from the worker with its tuples as lists."""
    return tuple(_tuple_body(part) if isinstance(part, (list, tuple)) else part for part in body)


# --- stage: fuzz -----------------------------------------------------------------------------------------

# Examples of the structure fuzz per profile: each is a capture of a bigger model (export_core of a torch.cond
# takes about a second), and the plain fuzz already covers the MLPs themselves.
STRUCTURE_EXAMPLES = {"learner": 6, "deep": 16}


def _describe_example(example) -> str:
    spec, (method, wrapping, dynamic) = example
    embedded = "" if wrapping == "plain" else f"\nembedded: {describe_wrapping(wrapping)}"
    return f"{describe(spec)}{embedded}\ncaptured with: {method}" + (" with a symbolic batch size" if dynamic else "")


def _agrees_with_reference(ctx: Context, example) -> None:
    """Every node (subgraphs included) and the whole graph: the attempt's answer is the reference's."""
    spec, (method, wrapping, dynamic) = example
    model = wrap_model(build_mlp(spec), wrapping, spec.in_features)
    gm = capture(model, (example_input(spec),), method, dynamic=dynamic).gm
    for node in all_nodes(gm):
        want = value(ctx.reference.node_dialect(node))
        got = value(ctx.attempt.node_dialect(node))
        expect(got == want, f"node_dialect({node_text(node)}) returned {got!r}, expected {want!r}")
    want = value(ctx.reference.detect_dialect(gm))
    if spec.style == "modules":
        assert want == CAPTURE_DIALECT[method], "internal: reference disagrees with the capture table"
    expect_graph(ctx, gm, want, f"{method} of the random model below", "see the lesson's rules")


@CHECKS.check(stage="fuzz", weight=4)
def random_mlps_in_every_capture(ctx):
    "random MLPs in every capture (some with a symbolic batch size): every node and the graph"
    strategy = st.tuples(mlp_specs(styles=("modules", "functional")), capture_plans(CAPTURES))
    fuzz(ctx, strategy, lambda example: _agrees_with_reference(ctx, example), describe=_describe_example)


@CHECKS.check(stage="fuzz", weight=2)
def random_mlps_in_cond_no_grad_custom_op_or_symbolic_batch(ctx):
    "random MLPs inside torch.cond or no_grad, or after a custom op, in every capture"
    strategy = st.tuples(mlp_specs(styles=("modules", "functional")), capture_plans(CAPTURES, WRAPPINGS))
    fuzz(ctx, strategy, lambda example: _agrees_with_reference(ctx, example), describe=_describe_example,
         max_examples=STRUCTURE_EXAMPLES[ctx.profile])


# Examples of the program fuzz per profile: a capture each (a cond export takes 1-3 s on a loaded machine);
# the hand-picked programs above already hold one of each rule, so the learner profile draws few.
PROGRAM_EXAMPLES = {"learner": 2, "deep": 14}


@CHECKS.check(stage="fuzz", weight=3)
def random_programs_in_every_capture_and_edit(ctx):
    "random programs (higher-order ops nested, sizes of every kind) in every capture, edited by passes"
    strategy = dialect_programs(tuple(programs.PROGRAM_CAPTURES), dynamic_captures=programs.DYNAMIC_PROGRAM_CAPTURES,
                                hops_for=programs.PROGRAM_CAPTURES, max_depth=3 if ctx.deep else 2,
                                leaves=programs.LEAVES, edits=programs.EDITS)

    def agrees(program) -> None:
        try:
            gm = programs.program_graph(program)
        except Exception:  # noqa: BLE001 - a program this torch cannot capture that way tests nothing
            return
        try:
            want = value(ctx.reference.detect_dialect(gm))
        except ValueError:
            want = "mixed"
        expect_program(ctx, program, want, "see the lesson's rules", gm=gm)

    fuzz(ctx, strategy, agrees, describe=programs.describe_program, max_examples=PROGRAM_EXAMPLES[ctx.profile])
