"""Hidden checks for kata 4 (dialect-aware op support). Learners: solve the kata from README.md, not from here.

Every check captures real graphs with `katas.common.capture` and compares the attempt with the reference
node by node: what `canonical_op` names an NPU op, what `NPUOperatorSupport.is_node_supported` answers,
what `classify` returns, and which partitions `CapabilityBasedPartitioner` proposes with the attempt's
support. Only behaviour is compared: an NPU op must get its exact canonical name, any other node just a
name that is not in NPU_OPS (or None), so any correct way of resolving targets passes.
"""
from __future__ import annotations

import functools
import importlib.util
import itertools
import operator
from collections.abc import Mapping
from pathlib import Path

import torch
import torch.fx
import torch.nn as nn
from hypothesis import strategies as st
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

from katas.common.capture import CAPTURE_DIALECT
from katas.common.naming import target_name
from checker.kit import load_module
from checker.kit import CheckFailed, Checks, Context, expect, fuzz
from katas.common import capture, describe, example_input
from katas.common.models import CPU_ONLY_ACTIVATIONS, NPU_FRIENDLY_ACTIVATIONS, LayerSpec, MLPSpec, build_mlp
from katas.common.npu import NPU_OPS
from katas.common.strategies import mlp_specs
from katas.common.zoo import ZOO

CHECKS = Checks()

# call nodes: every node the graph calls something for when it runs -- ops, and also getitem, higher-order ops
# and arithmetic on sizes, which are no ops (kata 1 calls them neutral) but still run, on the CPU
CALL_OPS = ("call_module", "call_function", "call_method")
DIALECT_OF = CAPTURE_DIALECT
ATEN_CAPTURES = ("make_fx_pre_dispatch", "export", "make_fx", "aot_autograd")
ALL_ACTIVATIONS = NPU_FRIENDLY_ACTIVATIONS + CPU_ONLY_ACTIVATIONS


programs = load_module(Path(__file__).with_name("programs.py"), "kata04_op_support_programs")  # generated graphs
# asked where the attempt runs; loading it registers the user ops katalib::gelu and atenlib::relu (here, and in the
# worker on its first probe)
probes = load_module(Path(__file__).with_name("probes.py"), "kata04_op_support_probes")


@functools.cache
def program_graph(spec) -> torch.fx.GraphModule:
    """The captured graph of a `programs.ProgramSpec` (cached: checks only read graphs)."""
    return programs.capture_program(spec)


def program_how(spec) -> str:
    """The graph of a program, as a message names it (one line)."""
    text = "; ".join(programs.STEP_TEXT[step] for step in spec.steps)
    dynamic = ", dynamic=True" if spec.dynamic else ""
    subclasses = any(step != "linear" and (step in programs.LINEAR_CLASSES or step in programs.ACTIVATION_CLASSES)
                     for step in spec.steps)
    tracer = " (a custom Tracer that keeps nn.Linear / nn.ReLU subclasses whole)" \
        if spec.capture == "symbolic_trace" and subclasses else ""
    return f"the {spec.capture}{dynamic}{tracer} graph of `{text}` on x of shape ({programs.BATCH}, {programs.WIDTH}) {spec.dtype}"


# --- describing nodes and graphs to a person -------------------------------------------------------------

def module_class_text(module: nn.Module) -> str:
    """'an nn.Linear' for torch.nn's own classes, 'a torch.ao.nn.qat.modules.linear.Linear' for any other."""
    cls = type(module)
    if getattr(nn, cls.__name__, None) is cls:
        return f"an nn.{cls.__name__}"
    return f"a {cls.__module__}.{cls.__qualname__}"


# the module classes the lesson's table names
TABLE_MODULES = (nn.Linear, nn.GELU, nn.ReLU, nn.Sigmoid, nn.Tanh, nn.SiLU, nn.LayerNorm, nn.Softmax)


def table_base(module: object) -> type | None:
    """The class of the lesson's table that `module`'s class is or derives from, if any."""
    return next((cls for cls in type(module).__mro__ if cls in TABLE_MODULES), None)


def target_text(node: torch.fx.Node, submodules: Mapping[str, nn.Module]) -> str:
    target = node.target
    if node.op == "call_module":
        module = submodules.get(target)
        return f"{target}, {module_class_text(module)}" if module is not None else str(target)
    if getattr(target, "__module__", None) == __name__:  # a function defined in these checks plays a user's own
        return f"users_code.{target.__name__}"
    return target_name(target)


def node_text(node: torch.fx.Node, submodules: Mapping[str, nn.Module]) -> str:
    return f"`{node.name}` ({node.op} {target_text(node, submodules)})"


def graph_summary(gm: torch.fx.GraphModule, limit: int = 10) -> str:
    submodules = dict(gm.named_modules())
    ops = [n for n in gm.graph.nodes if n.op in CALL_OPS]
    shown = ", ".join(node_text(n, submodules) for n in ops[:limit])
    return shown + (f", … {len(ops) - limit} more" if len(ops) > limit else "") if ops else "(no call nodes)"


@functools.cache
def zoo_graph(name: str, method: str) -> torch.fx.GraphModule:
    """The `method` capture of zoo model `name` (cached: checks only read graphs)."""
    model = ZOO[name]
    return capture(model.build(), model.inputs(), method).gm


def dialect_of(gm: torch.fx.GraphModule, method: str) -> str:
    """Kata 1's dialect of a captured graph: the capture's, except that an aten-level graph whose aten ops are
    all core (make_fx of pointwise code) is core_aten. Neutral nodes (getitem, custom ops, sizes) do not vote."""
    dialect = DIALECT_OF[method]
    if dialect not in ("aten", "core_aten"):
        return dialect
    ops = [n.target for n in gm.graph.nodes if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)
           and n.target.namespace == "aten" and isinstance(n.meta.get("val"), torch.Tensor)]
    return "core_aten" if ops and all(torch.Tag.core in op.tags for op in ops) else "aten"


def zoo_how(name: str, method: str) -> str:
    nodes = zoo_graph(name, method).graph.nodes
    dialect = f"{dialect_of(zoo_graph(name, method), method)} dialect"
    if method in ("symbolic_trace", "dynamo") and any(isinstance(n.target, torch._ops.OpOverloadPacket) for n in nodes):
        dialect = f"{DIALECT_OF[method]}-level calls next to a direct call of torch.ops.kata.linear_gelu"
    elif method == "symbolic_trace" and not any(n.op == "call_module" for n in nodes):
        dialect = "torch dialect"  # symbolic_trace of functional code: no leaf modules to call
    return f"the {method} graph of the `{name}` model ({dialect})"


def diagnose(node: torch.fx.Node, got: object, want: str, submodules: Mapping[str, nn.Module]) -> str:
    """Why canonical_op's answer `got` for `node` is probably wrong, judged from what it returned (not how)."""
    overload = isinstance(node.target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket))
    module = submodules.get(node.target) if node.op == "call_module" else None
    if node.kwargs.get("inplace") is True or getattr(module, "inplace", False) is True:
        keyword = ("its module was built with inplace=True (module.inplace)" if module is not None
                   else "it was called with the keyword inplace=True")
        return (f"This node differs from a plain {want} only in that {keyword}, and a keyword does not change the "
                "callable (README.md, 'In-place forms are not their functional op'): F.relu(x, inplace=True) is the callable F.relu, and nn.ReLU(inplace=True) is an "
                f"nn.ReLU, both {want!r}. Judge the callable the graph holds, not its arguments or the module's "
                "attributes: only a different callable (x.relu_(), torch.relu_, aten.relu_, operator.iadd) is an "
                "in-place form.")
    approximate = node.kwargs.get("approximate", getattr(module, "approximate", "none"))
    if approximate not in (None, "none") or any(arg == "tanh" for arg in node.args if isinstance(arg, str)):
        return (f"It computes gelu with approximate={approximate if approximate not in (None, 'none') else 'tanh'!r}. "
                f"Arguments never change the op (README.md, 'Judge the callable the graph holds, not its arguments'): "
                f"nn.GELU (any approximate), F.gelu(x, approximate='tanh') and aten.gelu.default(x, "
                f"approximate='tanh') are all {want!r}.")
    _, val = recorded_value(node)
    if got is None and isinstance(val, torch.Tensor) and (val.dim() == 0 or val.dtype != torch.float32):
        dtype = str(val.dtype).removeprefix('torch.')
        what = "a 0-dim tensor" if val.dim() == 0 else f"{'an' if dtype[0] in 'aeiou' else 'a'} {dtype} tensor"
        return (f"Its recorded value is {what}, still a tensor: your answer depends on the "
                f"{'rank' if val.dim() == 0 else 'dtype'}, and it must not. is_node_supported looks at the op only, "
                f"never at the dtype (README.md, 'Dtypes do not matter here')"
                f"{', and a 0-dim tensor is a tensor like any other' if val.dim() == 0 else ''}; which dtypes the NPU "
                f"computes in is kata 5's concern. Only non-tensor values (sizes the host computes) make size "
                f"arithmetic; this is {want!r}.")
    if node.op == "call_module":
        module = submodules.get(node.target)
        base = table_base(module)
        if module is not None and base is not None and type(module) is not base:
            return (f"Its class, {type(module).__module__}.{type(module).__name__}, is a subclass of nn.{base.__name__} "
                    f"that keeps nn.{base.__name__}.forward, so it computes exactly what an nn.{base.__name__} "
                    f"computes. Go by the class hierarchy (isinstance, or type(module).__mro__), then check that "
                    f"type(module).forward is nn.{base.__name__}.forward.")
        kind = module_class_text(module) if module is not None else "a module"
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
    if isinstance(node.target, torch._ops.OpOverload) and node.target._overloadname.startswith("out"):
        return (f"{node.target} is the out= overload of {want!r} (make_fx records it for torch.{want}(a, b, out=buf)). "
                f"The overload is never part of the canonical name, so it is {want!r}, like the functional overload "
                f"(README.md, 'In-place forms are not their functional op'): only a different name (add_, relu_, "
                f"operator.iadd) is an in-place form. Which overload the device compiles is kata 5's concern.")
    if overload:
        return (f"An OpOverload or OpOverloadPacket is named by its packet, without namespace or overload: "
                f"{node.target} is {want!r}.")
    if getattr(node.target, "__module__", None) == "_operator":
        return (f"Python operators in forward stay Python operators in Dynamo and symbolic_trace graphs: "
                f"`a + b` is operator.add, `a * b` operator.mul, `a @ b` operator.matmul. They are "
                f"{want!r} too.")
    return (f"The target is the function object {target_text(node, submodules)}; resolve it by identity "
            f"(README.md, 'What a node becomes', lists every torch-level function the checks use).")


def recorded_value(node: torch.fx.Node) -> tuple[bool, object]:
    """(True, value) if the capture recorded the node's value (meta "val", or Dynamo's "example_value")."""
    for key in ("val", "example_value"):
        if key in node.meta:
            return True, node.meta[key]
    return False, None


def functional_form(node: torch.fx.Node) -> str | None:
    """For an in-place form (x.relu_(), torch.relu_, aten.add_.Tensor, operator.iadd): the functional op it mutates
    like, if that op is an NPU op; else None."""
    target = node.target
    if node.op == "call_method" and isinstance(target, str):
        name = target
    elif isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        name = str(target).split(".")[1]
    elif node.op == "call_function" and getattr(target, "__name__", None):
        name = {"iadd": "add_", "imul": "mul_", "imatmul": "matmul_"}.get(target.__name__, target.__name__)
    else:
        return None
    if name.endswith("_") and not name.endswith("__") and name[:-1] in NPU_OPS:
        return name[:-1]
    return None


def cpu_reason(node: torch.fx.Node, want_op: object, submodules: Mapping[str, nn.Module]) -> str:
    """Why a call node the NPU cannot run is not an NPU op, in the lesson's words (the most specific rule first)."""
    target = node.target
    recorded, val = recorded_value(node)
    if isinstance(target, torch._ops.HigherOrderOperator):
        return (f"it is the higher-order op {target.__name__}: control flow (or a grad-mode region) whose body is "
                f"another graph, the get_attr submodules it takes. The node itself is 'cpu' whatever its body holds; "
                f"its name comes from the ops inside and says nothing about what it is")
    if node.op == "call_function" and target is operator.getitem:
        source = node.args[0] if node.args else None
        of = (f"`{source.name}`" if isinstance(source, torch.fx.Node) else "its argument")
        return (f"operator.getitem is no op and not in NPU_OPS: it indexes or unpacks {of}, and stays 'cpu' even "
                f"when what it indexes is a tensor an NPU op produced (x[0], x[:, 1:] in Dynamo and symbolic_trace "
                f"graphs), whatever the partitioner later does with it")
    inplace = functional_form(node)
    if inplace is not None:
        shown = target if isinstance(target, str) else target_text(node, submodules)
        return (f"it is an in-place form ({shown}), not the functional op {inplace!r}: names are exact, and "
                f"NPU_OPS holds functional ops only (the NPU writes a new output; an in-place op mutates a tensor "
                f"the host holds)")
    if recorded and not isinstance(val, torch.Tensor):
        kind = type(val).__name__ if val is not None else "None"
        kind = f"{'an' if kind[0] in 'aeiouAEIOU' else 'a'} {kind}" if val is not None else kind
        return (f"its recorded value (meta['val'] / meta['example_value']) is {kind}, not a tensor: this is "
                f"arithmetic on sizes that the host runs to compute a shape (a SymInt, a SymFloat, an int, a bool: "
                f"anything but a tensor), not a tensor op, whatever its target says ({target_text(node, submodules)})")
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        namespace = str(target).split(".")[0]
        if namespace not in ("aten", "kata"):
            whose = ("torch's own primitives, not ATen ops" if namespace == "prims" else
                     "a user's own code, registered with torch.library")
            alike = (f" (the namespace is compared whole: `{namespace}` only starts like "
                     f"`{'kata' if namespace.startswith('kata') else 'aten'}`)"
                     if namespace.startswith(("aten", "kata")) else "")
            return (f"it is an op of the `{namespace}` namespace{alike}: {whose}, which the NPU has no kernel "
                    f"for whatever it is called; only ops of the `aten` and `kata` namespaces are NPU ops")
    if node.op == "call_module" and isinstance(submodules.get(target), torch.fx.GraphModule):
        return (f"it calls the GraphModule `{target}` (a partition that fuse_partitions / partition_and_fuse put "
                f"into the graph): a GraphModule is no module class of the table, whatever ops its body holds, so "
                f"it is 'cpu' (README.md, 'Telling the partitioner'); look at type(module), not inside it")
    if node.op == "call_module":
        module = submodules.get(target)
        base = table_base(module)
        if module is not None and base is not None and type(module) is not base and \
                type(module).forward is not base.forward:
            own = "forward" in vars(type(module))
            return (f"its class {type(module).__module__}.{type(module).__qualname__} subclasses nn.{base.__name__} "
                    f"but its forward is not nn.{base.__name__}.forward ("
                    + ("it defines its own" if own else
                       f"it inherits {type(module).forward.__module__}.{type(module).forward.__qualname__}, an "
                       f"override from a class between them")
                    + f"), so it computes something else than an nn.{base.__name__}. The rule holds for every class "
                      f"of the table, activations as much as nn.Linear: compare type(module).forward with the base "
                      f"class's, whatever the class body defines")
    return f"{want_op or 'this op'!r} is not in NPU_OPS, so it runs on the CPU"


def npu_reason(node: torch.fx.Node, want_op: str, submodules: Mapping[str, nn.Module]) -> str:
    """Why a node is an NPU op, naming what the lesson says does not matter (dtype, packet vs overload)."""
    text = f"its canonical op {want_op!r} is in NPU_OPS"
    _, val = recorded_value(node)
    if isinstance(val, torch.Tensor) and val.dtype != torch.float32:
        text += (f", and support goes by the op's name only: the node computes {str(val.dtype).removeprefix('torch.')}"
                 f", and dtypes are kata 5's concern, not is_node_supported's")
    if isinstance(val, torch.Tensor) and val.dim() == 0:
        text += (", and it is a 0-dim tensor: a tensor like any other (only non-tensor values, sizes the host "
                 "computes, are not tensor ops)")
    if isinstance(node.target, torch._ops.OpOverloadPacket):
        text += f" ({node.target} is a packet of the {str(node.target).split('.')[0]} namespace: its name counts)"
    if is_out_overload(node):
        text += f" ({node.target} is an out= overload: the overload is never part of the name)"
    if node.op == "call_module":
        module = submodules.get(node.target)
        base = table_base(module)
        if module is not None and base is not None and type(module) is not base:
            text += (f" ({type(module).__qualname__} subclasses nn.{base.__name__} and its forward is "
                     f"nn.{base.__name__}.forward)")
    return text


# --- calling the attempt ---------------------------------------------------------------------------------

def value(verdict: object) -> object:
    """Compare enum-like answers by value, so a str Enum with the right values works."""
    return getattr(verdict, "value", verdict)


def attempt_classify(ctx: Context, gm: torch.fx.GraphModule, how: str) -> dict[str, object]:
    """The attempt's classify(gm), checked for shape: exactly the call nodes, each 'npu' or 'cpu'."""
    got = ctx.attempt.classify(gm)
    expect(isinstance(got, Mapping), f"classify on {how} returned a {type(got).__name__}; expected a dict of "
                                     f"node name -> 'npu' or 'cpu'")
    expect(not any(isinstance(key, torch.fx.Node) for key in got),
           f"classify on {how} returned a dict keyed by Node objects; key it by node.name (a str)")
    submodules = dict(gm.named_modules())
    for node in gm.graph.nodes:
        if node.op in CALL_OPS:
            expect(node.name in got, f"classify on {how} has no entry for {node_text(node, submodules)}: every call "
                                     f"node (call_module, call_function and call_method — getitem, higher-order "
                                     f"ops and size arithmetic included: no ops, but the graph runs them) must get "
                                     f"'npu' or 'cpu'")
        elif node.name in got:
            raise CheckFailed(f"classify on {how} gave {node.op} node `{node.name}` a verdict "
                              f"({value(got[node.name])!r}); only call nodes are classified — "
                              f"placeholder, get_attr and output nodes do no work")
    names = {n.name for n in gm.graph.nodes}
    stray = sorted(set(map(str, got)) - names)
    expect(not stray, f"classify on {how} returned names that are not nodes of the graph: {stray}. classify keys "
                      f"its dict by the names of the graph's own call nodes, and nothing modifies the graph "
                      f"(README.md, 'The contract'): no node added, removed or renamed")
    for name, verdict in got.items():
        expect(value(verdict) in ("npu", "cpu"), f"classify on {how} said {value(verdict)!r} for `{name}`; "
                                                 f"expected 'npu' or 'cpu'")
    return dict(got)


def carried_over(ctx: Context, node: torch.fx.Node, want_op: object) -> str:
    """When the attempt's canonical_op is wrong on `node`: if a freshly imported copy of the attempt (one that was
    asked about no other graph) answers it right, a sentence saying the wrong answer was carried over; else ''."""
    gm = node.graph.owning_module
    if gm is None:
        return ""
    try:
        fresh = ctx.probe(probes.probe_fresh_canonical_op, gm, node.name)
    except Exception:  # noqa: BLE001 - only a better message was at stake
        return ""
    right = fresh == want_op if want_op in NPU_OPS else not (isinstance(fresh, str) and fresh in NPU_OPS)
    if not right:
        return ""
    return (f"Asked about this graph alone (your module imported afresh, asked nothing before), canonical_op "
            f"answers {fresh!r} here, which is right: your code carries an answer over from a graph it was asked "
            f"about earlier (a cache keyed by node.target, node.name or the callable?). One answer per node, "
            f"whatever order the graphs come in (README.md, 'The contract'): keep no notes that outlive one call.")


def support_carried_over(ctx: Context, node: torch.fx.Node, submodules, supported: object, want: bool, how: str,
                         asked: list) -> str:
    """When a support instance that was asked about other nodes of this graph first (`asked`: (node, answer) in
    order) answers `node` wrong: if a new instance answers it right, a message that leads with the state carried over
    on the instance, naming the earlier node of the same target or name; else ''."""
    fresh = ctx.attempt.NPUOperatorSupport().is_node_supported(submodules, node)
    if bool(fresh) != want:
        return ""
    same = next((n for n, answer in reversed(asked) if bool(answer) == bool(supported) and (
        n.name == node.name or n.target == node.target)), None)
    earlier = ""
    if same is not None:
        same_op = ctx.reference.canonical_op(same, submodules)
        recorded, val = recorded_value(same)
        if same_op in NPU_OPS:
            what = f"{same_op!r}, an NPU op"
        elif same.op in CALL_OPS and recorded and not isinstance(val, torch.Tensor):
            kind = type(val).__name__
            shown = "None" if val is None else f"{'an' if kind[0] in 'aeiouAEIOU' else 'a'} {kind}"
            what = f"arithmetic on sizes: its recorded value is {shown}"
        else:
            what = "no NPU op"
        shared = "the same target" if same.target == node.target else "the same name"
        earlier = (f" Earlier in this graph it was asked about {node_text(same, submodules)}, {shared} but another "
                   f"op ({what}), and rightly answered {bool(supported)} there.")
    return (f"State carried over on the instance: one NPUOperatorSupport(), asked about the nodes of {how} in graph "
            f"order (as the partitioner asks), answered {supported!r} for {node_text(node, submodules)}, expected "
            f"{want}; a new NPUOperatorSupport() answers {fresh!r} there, which is right.{earlier} Your support "
            f"seems to carry an answer over from another node: canonical_op and your rule for this node are right, "
            f"the state on the instance is not. Keep nothing on the instance between calls (no answers memoized by "
            f"node.target, node.name or the callable): targets and names repeat while the ops differ (operator.mul "
            f"on sizes and on tensors), and is_node_supported depends on the node's op only (README.md, "
            f"'The contract').")


def expect_node_agrees(ctx: Context, node: torch.fx.Node, submodules, verdicts: dict, how: str,
                       support: object = None, asked: list | None = None) -> None:
    """canonical_op, is_node_supported and classify's verdict for one node agree with the reference. `support` is
    the attempt's NPUOperatorSupport to ask (a new one when not given); `asked`, when given, lists the (node, answer)
    pairs that same instance gave before, in order, and gets this node's answer appended."""
    want_op = ctx.reference.canonical_op(node, submodules)
    got_op = ctx.attempt.canonical_op(node, submodules)
    on_npu = want_op in NPU_OPS
    where = f"{node_text(node, submodules)} in {how}"
    if node.op not in CALL_OPS:
        expect(got_op is None, f"canonical_op for {where} returned {got_op!r}; expected None: a {node.op} node "
                               f"does no work, so it is no op at all")
    elif on_npu:
        if got_op != want_op:
            raise CheckFailed(f"canonical_op for {where} returned {got_op!r}, expected {want_op!r}. "
                              f"{carried_over(ctx, node, want_op) or diagnose(node, got_op, want_op, submodules)}")
    elif isinstance(got_op, str) and got_op in NPU_OPS:
        carried = carried_over(ctx, node, want_op)
        raise CheckFailed(f"canonical_op for {where} returned {got_op!r}, an NPU op, but the NPU has no kernel for "
                          f"this node" + (f". {carried}" if carried else f": {cpu_reason(node, want_op, submodules)}."))
    support = support if support is not None else ctx.attempt.NPUOperatorSupport()
    supported = support.is_node_supported(submodules, node)
    if bool(supported) != on_npu and asked:  # an instance asked about other nodes first: is that what went wrong?
        carried = support_carried_over(ctx, node, submodules, supported, on_npu, how, asked)
        if carried:
            raise CheckFailed(carried)
    if asked is not None:
        asked.append((node, supported))
    if on_npu:
        because = npu_reason(node, want_op, submodules)
    elif node.op not in CALL_OPS:
        because = f"a {node.op} node is not an op, so it is never supported"
    else:
        because = cpu_reason(node, want_op, submodules)
    expect(bool(supported) == on_npu, f"NPUOperatorSupport().is_node_supported(submodules, node) for {where} returned "
                                      f"{supported!r}, expected {on_npu}: {because}")
    if node.op in CALL_OPS:
        verdict = value(verdicts[node.name])
        want = "npu" if on_npu else "cpu"
        if verdict != want:
            raise CheckFailed(f"classify on {how} said {verdict!r} for {node_text(node, submodules)}, expected "
                              f"{want!r}; canonical_op and is_node_supported agree with the reference there. "
                              + classify_carried_over(ctx, node, want))


def classify_carried_over(ctx: Context, node: torch.fx.Node, want: str) -> str:
    """Why classify's verdict is wrong where canonical_op and is_node_supported are right: if a freshly imported copy
    of the attempt classifies the graph right, an answer was carried over from an earlier graph."""
    gm = node.graph.owning_module
    try:
        fresh = ctx.probe(probes.probe_fresh_classify, gm).get(node.name) if gm is not None else None
    except Exception:  # noqa: BLE001 - only a better message was at stake
        fresh = None
    if fresh == want:
        return (f"Asked about this graph alone (your module imported afresh, asked nothing before), classify says "
                f"{fresh!r} here, which is right: your classify carries an answer over from a graph it classified "
                f"earlier (a support object, or a cache, kept at module level and shared by every call?). One answer "
                f"per node, whatever order the graphs come in (README.md, 'The contract'): let each classify call make "
                f"its own NPUOperatorSupport(), or keep none that remembers anything.")
    return "So classify should follow is_node_supported (with submodules = dict(gm.named_modules()))."


def expect_graph_agrees(ctx: Context, gm: torch.fx.GraphModule, how: str) -> None:
    """Every node of `gm` gets the reference's answers."""
    ctx.reference.classify(gm)
    verdicts = attempt_classify(ctx, gm, how)
    submodules = dict(gm.named_modules())
    support = ctx.attempt.NPUOperatorSupport()  # one per graph: each construction is a round trip to the worker
    asked: list = []  # (node, answer) this instance gave, in order: names the node a wrong answer was carried from
    for node in gm.graph.nodes:
        expect_node_agrees(ctx, node, submodules, verdicts, how, support, asked)


def expect_one_support_across_graphs(ctx: Context, graphs) -> None:
    """ONE NPUOperatorSupport of the attempt, asked about every node of each (graph, description) in turn, as a
    backend that keeps one support object for its lifetime asks it, answers each node as a new one does. Graphs
    whose nodes share names and targets but not ops (`act`, `s0`, Dynamo's `h`, a `mul` of sizes or of tensors) show
    an instance that keeps anything from one call to the next."""
    support = ctx.attempt.NPUOperatorSupport()
    asked: list[tuple[torch.fx.GraphModule, str, torch.fx.Node]] = []  # (graph, description, node) asked so far
    graphs_before: list[str] = []  # the graphs asked about before this one, in order
    for gm, how in graphs:
        submodules = dict(gm.named_modules())
        for node in gm.graph.nodes:
            want_op = ctx.reference.canonical_op(node, submodules)
            want = node.op in CALL_OPS and want_op in NPU_OPS
            got = support.is_node_supported(submodules, node)
            if bool(got) == want:
                asked.append((gm, how, node))
                continue
            fresh = ctx.attempt.NPUOperatorSupport().is_node_supported(submodules, node)
            if bool(fresh) != want:  # wrong however it is asked: the node's own rule is broken, not the order
                expect_node_agrees(ctx, node, submodules, attempt_classify(ctx, gm, how), how)
                raise CheckFailed(f"NPUOperatorSupport().is_node_supported(submodules, node) for "
                                  f"{node_text(node, submodules)} in {how} returned {fresh!r}, expected {want}.")
            because = (npu_reason(node, want_op, submodules) if want else
                       cpu_reason(node, want_op, submodules) if node.op in CALL_OPS else
                       f"a {node.op} node is not an op, so it is never supported")
            same = next((n for _, _, n in reversed(asked) if n is not node and (
                n.name == node.name or (n.op == node.op == "call_module" and n.target == node.target))), None)
            twin = ""
            if same is not None:
                twin_sub = dict(same.graph.owning_module.named_modules())
                same_want = same.op in CALL_OPS and ctx.reference.canonical_op(same, twin_sub) in NPU_OPS
                where = "in the same graph" if same.graph is node.graph else "in that earlier graph"
                twin = (f" It was asked before about {node_text(same, twin_sub)} {where}, which is "
                        f"{'supported' if same_want else 'not supported'}: the same name or target, another op.")
            raise CheckFailed(
                f"State carried over on the instance: one NPUOperatorSupport() was asked about "
                + (f"{'; then '.join(graphs_before)}; then about {how}" if graphs_before
                   else f"{how} (the first graph it was asked about)")
                + f". For {node_text(node, submodules)} it answered {got!r}, expected {want}, but a new "
                f"NPUOperatorSupport() answers {fresh!r} there, which is right: your instance carries something over "
                f"from what it was asked before.{twin} Your rule for this node is right (a new instance applies it); "
                f"what is wrong is what the instance kept. Node names and targets repeat from graph to graph (`h`, "
                f"`s0`, `act`, `mul`) while their ops differ: keep nothing on the instance between calls, no answers "
                f"memoized by node.name or node.target, no submodules dict kept from an earlier call (use the one each "
                f"call is given). is_node_supported depends on the node's op only, not on any graph asked about before "
                f"(README.md, 'The contract'); kata 5's backend keeps one support object for every graph it compiles. "
                f"(Why {want} is right for this node: {because}.)")
        graphs_before.append(how)


def expect_fully_on_npu(ctx: Context, gm: torch.fx.GraphModule, how: str) -> None:
    """A graph of NPU ops only: every call node 'npu'. The message names the dialect and the first miss."""
    submodules = dict(gm.named_modules())
    calls = [n for n in gm.graph.nodes if n.op in CALL_OPS]
    assert all(ctx.reference.classify(gm)[n.name] == "npu" for n in calls), f"internal: {how} is not all-NPU"
    verdicts = attempt_classify(ctx, gm, how)
    missed = [n for n in calls if value(verdicts[n.name]) != "npu"]
    if missed:
        first = missed[0]
        want_op = ctx.reference.canonical_op(first, submodules)
        got_op = ctx.attempt.canonical_op(first, submodules)
        if got_op != want_op:
            reason = (f"canonical_op returned {got_op!r}, expected {want_op!r}. "
                      f"{diagnose(first, got_op, want_op, submodules)}")
        elif not ctx.attempt.NPUOperatorSupport().is_node_supported(submodules, first):
            reason = (f"canonical_op rightly says {want_op!r}, which is in NPU_OPS, but "
                      f"NPUOperatorSupport().is_node_supported(submodules, node) said no: "
                      f"{npu_reason(first, want_op, submodules)}.")
        else:
            reason = (f"canonical_op ({want_op!r}) and is_node_supported (True) are right, but classify said "
                      f"{value(verdicts[first.name])!r}: classify should follow is_node_supported.")
        on = len(calls) - len(missed)
        raise CheckFailed(
            f"classify put {on} of {len(calls)} call nodes of {how} on the NPU, but every one of them is an "
            f"NPU op{' — the accelerator would do nothing' if on == 0 else ''}.\n"
            f"First missed node: {node_text(first, submodules)}: {reason}\n"
            f"graph: {graph_summary(gm)}")
    expect_graph_agrees(ctx, gm, how)


def _fuzz_dialect(ctx: Context, specs, methods: tuple[str, ...], max_examples: int | None = None) -> None:
    strategy = st.tuples(specs, st.sampled_from(methods))

    def prop(example) -> None:
        spec, method = example
        gm = capture(build_mlp(spec), (example_input(spec),), method).gm
        expect_graph_agrees(ctx, gm, f"the {method} graph of the random MLP below ({dialect_of(gm, method)} dialect)")

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
            yield gm, (f"the {method} graph ({dialect_of(gm, method)} dialect) of an MLP with "
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
            if node.op in CALL_OPS:
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
    ("aten_packet", "symbolic_trace", "relu", "relu", "torch.ops.aten.relu, a packet of the aten namespace"),
    ("aten_packet", "dynamo", "relu", "relu", "torch.ops.aten.relu, a packet of the aten namespace"),
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
    "aten": [(m, c) for c in ATEN_CAPTURES for m in ("mlp_3d", "residual", "functional")],
    # make_fx of relu/mul/add holds core ops only: kata 1's CORE_ATEN, though make_fx usually gives ATEN
    "core_aten": [(m, "export_core") for m in ("mlp_3d", "residual", "functional", "pointwise")]
                 + [("pointwise", "make_fx")],
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
    "core_aten dialect: run_decompositions() graphs, and make_fx of pointwise code, of NPU ops are 100% NPU"
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
        odd = sorted({name for p in got for name in p if kinds.get(name) not in CALL_OPS})
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


def fused_graph(ctx: Context, gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of `gm` after partition_and_fuse with the reference's support: its partitions become fused_N
    GraphModules called by call_module nodes."""
    import copy
    fused = copy.deepcopy(gm)
    CapabilityBasedPartitioner(fused, ctx.reference.NPUOperatorSupport(),
                               allows_single_node_partition=True).partition_and_fuse()
    return fused


@CHECKS.check(stage="partition", weight=3)
def partitions_match_reference_on_zoo(ctx):
    ("CapabilityBasedPartitioner with your NPUOperatorSupport proposes the reference's partitions (zoo); on the "
     "fused graph, fused_N is 'cpu'")
    for method in partition_captures(ctx):
        for name in ("mlp", "residual", "norm_block", "attention", "functional", "renamed", "fused_linear_gelu"):
            expect_same_partitions(ctx, zoo_graph(name, method), zoo_how(name, method))
    for method in partition_captures(ctx):
        for name in ("mlp", "norm_block", "attention", "fused_linear_gelu"):
            expect_graph_agrees(ctx, fused_graph(ctx, zoo_graph(name, method)),
                                f"{zoo_how(name, method)}, after partition_and_fuse() (fused_N are GraphModules)")


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


# models whose `act` is a different module class, asked one after the other in both orders
MODEL_ORDERS = (("mlp", "renamed"), ("renamed", "mlp"))


@CHECKS.check(stage="edge_cases", weight=2)
def modules_resolve_by_type_not_attribute_name(ctx):
    "call_module nodes go by module type: `proj` is a Linear, `act` a Softmax, `block.0` a Linear, in any order"
    renamed = ("renamed", "symbolic_trace")
    # `act` is an nn.GELU in mlp and an nn.Softmax in renamed: asked one after the other, both ways, an answer that
    # outlives its graph (a cache keyed by node.target) shows here whatever checks ran before
    for order in MODEL_ORDERS:
        previous = None
        asked = []
        for name in order:
            gm = zoo_graph(name, "symbolic_trace")
            submodules = dict(gm.named_modules())
            how = (zoo_how(name, "symbolic_trace") + (" (proj: Linear, act: Softmax, block: Sequential(Linear, SiLU), "
                                                       "head: Linear)" if (name, "symbolic_trace") == renamed else ""))
            for node in gm.graph.nodes:
                if node.op != "call_module":
                    continue
                want = ctx.reference.canonical_op(node, submodules)
                got = ctx.attempt.canonical_op(node, submodules)
                ok = got == want if want in NPU_OPS else not (isinstance(got, str) and got in NPU_OPS)
                if ok:
                    continue
                carried = previous is not None and any(
                    n.op == "call_module" and n.target == node.target for n in previous.graph.nodes)
                if carried:
                    before = dict(previous.named_modules())[node.target]
                    raise CheckFailed(
                        f"canonical_op for {node_text(node, submodules)} in {how} returned {got!r}, expected {want!r}, "
                        f"right after your code was asked about the graph of another model whose `{node.target}` is "
                        f"{module_class_text(before)}. The same target names different modules in different graphs: "
                        f"an answer may depend only on the node and the submodules it is given. A cache keyed by "
                        f"node.target (or anything else that outlives one graph) carries one model's answer into "
                        f"the next; look the module up in submodules every time.")
                raise CheckFailed(f"canonical_op for {node_text(node, submodules)} in {how} returned {got!r}, expected "
                                  f"{want!r}. {diagnose(node, got, want, submodules)}")
            expect_graph_agrees(ctx, gm, how)
            previous = gm
            asked.append((gm, how))
        # one support instance asked about both graphs, in this order: an instance that keeps answers (by node.name,
        # node.target) or the first submodules dict it was given answers the second graph with the first one's ops
        expect_one_support_across_graphs(ctx, asked)


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


# getitem on a tensor an NPU op produced (indexing, slicing) next to getitem on a multi-output op
GETITEM_PROGRAMS = tuple(programs.ProgramSpec(("index_tensor", "index_rows", "unpack_max"), capture)
                         for capture in ("symbolic_trace", "dynamo"))


@CHECKS.check(stage="edge_cases", weight=1)
def getitem_is_a_cpu_call_node(ctx):
    "operator.getitem is no op but a call node: classified 'cpu', on a multi-output op and on an NPU op's tensor"
    graphs = [(zoo_graph("norm_block", "make_fx"), zoo_how("norm_block", "make_fx"))]
    graphs += [(program_graph(spec), program_how(spec)) for spec in GETITEM_PROGRAMS]
    for gm, how in graphs:
        verdicts = attempt_classify(ctx, gm, how)
        submodules = dict(gm.named_modules())
        for node in gm.graph.nodes:
            if node.op == "call_function" and node.target is operator.getitem:
                got = value(verdicts[node.name])
                expect(got == "cpu", f"classify on {how} said {got!r} for getitem node `{node.name}`, expected "
                                     f"'cpu': {cpu_reason(node, 'getitem', submodules)}")
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
           f"called gelu. Resolve call_function targets by the identity of the callable, not by a name: neither "
           f"the function's __name__ nor the node's name (node.name, which captures derive from what the node "
           f"calls, `gelu`, `gelu_1`, ...) says what it computes. An unknown callable is None and runs on the CPU.")
    expect_graph_agrees(ctx, gm, how)


# --- the kinds of node that are no ops (kata 1 calls them neutral) ------------------------------------------


class TorchLinearSubclasses(nn.Module):
    """Two subclasses of nn.Linear from torch itself, both kept as call_module nodes by symbolic_trace (their
    classes live under torch.nn / torch.ao.nn): NonDynamicallyQuantizableLinear only renames nn.Linear (it is
    nn.MultiheadAttention's out_proj); torch.ao.nn.qat.Linear overrides forward to fake-quantize its weight."""

    def __init__(self) -> None:
        super().__init__()
        from torch.ao.nn.qat import Linear as QATLinear
        from torch.ao.quantization import get_default_qat_qconfig
        from torch.nn.modules.linear import NonDynamicallyQuantizableLinear

        self.out_proj, self.act = NonDynamicallyQuantizableLinear(4, 6), nn.GELU()
        self.qat_fc = QATLinear(6, 3, qconfig=get_default_qat_qconfig("x86"))

    def forward(self, x):
        return self.act(self.qat_fc(self.act(self.out_proj(x))))


class TorchGrandchildLinear(nn.Module):
    """torch.ao.nn.qat.dynamic.Linear: a subclass of torch.ao.nn.qat.Linear that defines no forward of its own but
    inherits qat.Linear's fake-quantizing one (depth 2 below nn.Linear). symbolic_trace keeps it whole."""

    def __init__(self) -> None:
        super().__init__()
        from torch.ao.nn.qat.dynamic import Linear as DynamicQATLinear
        from torch.ao.quantization import default_dynamic_qat_qconfig

        self.fc, self.act = DynamicQATLinear(4, 4, qconfig=default_dynamic_qat_qconfig), nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


# user subclasses at depth 1 and 2, with and without a forward of their own, kept whole by a custom tracer
SUBCLASS_PROGRAM = programs.ProgramSpec(
    ("linear_keeps", "linear_keeps_keeps", "linear_overrides", "linear_inherits_override", "linear_restores_forward",
     "relu_keeps", "relu_keeps_overrides"), "symbolic_trace")


@CHECKS.check(stage="edge_cases", weight=2)
def module_subclasses_count_only_with_their_base_forward(ctx):
    "an nn.Linear subclass is 'linear' only if type(module).forward is nn.Linear.forward, at any depth"
    graphs = [(torch.fx.symbolic_trace(TorchLinearSubclasses().eval()),
               "the symbolic_trace graph of act(qat_fc(act(out_proj(x)))), two nn.Linear subclasses from torch"),
              (torch.fx.symbolic_trace(TorchGrandchildLinear().eval()),
               "the symbolic_trace graph of act(fc(x)), fc a torch.ao.nn.qat.dynamic.Linear (inherits "
               "torch.ao.nn.qat.Linear's forward)"),
              (program_graph(SUBCLASS_PROGRAM), program_how(SUBCLASS_PROGRAM))]
    for gm, how in graphs:
        submodules = dict(gm.named_modules())
        verdicts = attempt_classify(ctx, gm, how)
        for node in gm.graph.nodes:
            if node.op == "call_module":
                expect_node_agrees(ctx, node, submodules, verdicts, how)
        expect_graph_agrees(ctx, gm, how)
    expect_borrowed_forward_is_no_table_class(ctx)


def expect_borrowed_forward_is_no_table_class(ctx: Context) -> None:
    """A module class that is no subclass of a table class but borrows `forward = nn.Linear.forward` is no NPU op:
    the rule starts from the class (isinstance), then checks the forward. The graph is built where the attempt runs
    (its class lives in probes.py)."""
    gm = probes.borrowed_forward_graph()
    want = probes.answers_of(ctx.reference, gm)
    got = ctx.probe(probes.probe_borrowed_forward)
    how = ("the graph of act(fc(x)), fc a BorrowsLinearForward(nn.Module) whose class body says "
           "`forward = nn.Linear.forward` (no subclass of nn.Linear), kept whole by a custom tracer")
    for name, (want_op, want_supported, want_verdict) in want.items():
        got_op, got_supported, got_verdict = got.get(name, [None, None, None])
        if want_op in NPU_OPS:
            ok = (got_op, got_supported, got_verdict) == (want_op, want_supported, want_verdict)
        else:
            ok = not (isinstance(got_op, str) and got_op in NPU_OPS) and not got_supported and got_verdict == "cpu"
        if ok:
            continue
        said = f"canonical_op {got_op!r}, is_node_supported {got_supported!r}, classify {got_verdict!r}"
        if name == "fc":
            raise CheckFailed(
                f"On {how}, your code answered {said} for `fc`, expected no NPU op ('cpu'). Its class is no subclass "
                f"of any class of the table, so it is no op of the table, whatever its forward: the rule starts from "
                f"the class, `isinstance(module, nn.Linear) and type(module).forward is nn.Linear.forward` (README.md, "
                f"'Subclasses'). A table keyed by forward functions alone accepts any class that borrows one.")
        raise CheckFailed(f"On {how}, your code answered {said} for `{name}`, expected canonical_op {want_op!r}, "
                          f"is_node_supported {want_supported}, classify {want_verdict!r}.")


class UserCustomOp(nn.Module):
    """A Linear, then an op of another namespace (the user's own torch.ops.mylib.gelu from katas/common/ops.py, or
    one of probes.USER_OPS, or torch's own prims), plus the input."""

    def __init__(self, op: str = "mylib.gelu") -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.op = op

    def forward(self, x):
        namespace, name = self.op.split(".")
        h = self.fc(x)
        if namespace == "prims":
            return getattr(torch.ops.prims, name).default(h, x) + x
        return getattr(getattr(torch.ops, namespace), name)(h) + x


# ops of other namespaces: the user's mylib::gelu, a user's library whose namespace starts like the NPU's own
# (katalib::gelu, atenlib::relu: not `kata`, not `aten`), and torch's own prims (prims.mul is no aten op)
OTHER_NAMESPACE_OPS = (("mylib.gelu", "mylib::gelu: the user's own custom op"),
                       ("katalib.gelu", "katalib::gelu: a user's custom op whose namespace starts with kata"),
                       ("atenlib.relu", "atenlib::relu: a user's custom op whose namespace starts with aten"),
                       ("prims.mul", "prims::mul: torch's own prims namespace, not aten"))


@CHECKS.check(stage="edge_cases", weight=2)
def custom_ops_of_other_namespaces_stay_on_cpu(ctx):
    ("an op of any namespace but aten and kata is no NPU op, as packet and as overload: mylib::gelu, katalib::gelu, "
     "atenlib::relu, prims::mul")
    ctx.probe(probes.probe_user_ops_registered)  # where the attempt runs too, before a graph holding them crosses
    inputs = (torch.randn(2, 4, generator=torch.Generator().manual_seed(1)),)
    for op, what in OTHER_NAMESPACE_OPS:
        model = UserCustomOp(op).eval()
        call = f"torch.ops.{op}.default(fc(x), x)" if op.startswith("prims") else f"torch.ops.{op}(fc(x))"
        for method in ("symbolic_trace", "dynamo", "make_fx", "export"):
            gm = capture(model, inputs, method).gm
            how = f"the {method} graph of {call} + x ({what})"
            expect_cpu_ops_on_cpu(ctx, [(gm, how)])


def _higher_order_graphs(ctx: Context):
    """(graph, description): torch.cond in Dynamo's graph, a no_grad block in export's."""
    from katas.common.models import wrap_model

    mlp = ZOO["mlp"]
    plans = [("cond", "dynamo"), ("no_grad", "export")]
    for wrapping, method in plans:
        gm = capture(wrap_model(mlp.build(), wrapping, 4), mlp.inputs(), method).gm
        what = ("torch.cond(x.amax() > 0, mlp(x), mlp(-x))" if wrapping == "cond"
                else "an MLP inside `with torch.no_grad():`")
        yield gm, f"the {method} graph of {what}"


@CHECKS.check(stage="edge_cases", weight=2)
def higher_order_ops_are_cpu_call_nodes(ctx):
    "higher-order ops (cond, wrap_with_set_grad_enabled) are call nodes: classified 'cpu'"
    for gm, how in _higher_order_graphs(ctx):
        hops = [n for n in gm.graph.nodes if isinstance(n.target, torch._ops.HigherOrderOperator)]
        assert hops, f"internal: no higher-order op in {how}"
        verdicts = attempt_classify(ctx, gm, how)  # every call node has an entry: the higher-order op too
        for node in hops:
            got = value(verdicts[node.name])
            expect(got == "cpu", f"classify on {how} said {got!r} for `{node.name}` (the higher-order op "
                                 f"{node.target.__name__}), expected 'cpu': {cpu_reason(node, None, {})}.")
        expect_graph_agrees(ctx, gm, how)


class FlattenBatch(nn.Module):
    """Flattens (batch, tokens, 4) to (batch * tokens, 4) with sizes read off the input, then Linear and ReLU."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.fc(x.reshape(x.shape[0] * x.shape[1], 4)))


SYMFLOAT_PROGRAM = programs.ProgramSpec(("relu_function", "size_symfloat"), "dynamo", dynamic=True)
# operator.mul on tensors (relu(h.sum()) * 2, h * ...), asked before and after the size arithmetic: one answer per
# node, whatever order the graphs come in
TENSOR_MUL_PROGRAM = programs.ProgramSpec(("linear", "zero_dim"), "dynamo")
# a tensor times a symbolic size (operator.mul in Dynamo, aten.mul.Tensor in export): a SymInt among its operands,
# a tensor for its value, so a mul
SIZE_SCALED_PROGRAMS = (programs.ProgramSpec(("linear", "scale_by_size"), "dynamo", dynamic=True),
                        programs.ProgramSpec(("linear", "scale_by_size"), "export", dynamic=True))


def static_size_graph(key: str) -> torch.fx.GraphModule:
    """A graph whose size arithmetic recorded plain Python numbers, as a capture that specialised the sizes would:
    rows = operator.mul(2, 3) (recorded 6, an int), cols = operator.add(rows, -2) (4), scale = operator.mul(rows,
    0.5) (3.0, a float), then x.view(rows, cols) * scale and a relu. `key` is where the values are recorded:
    "val" (make_fx, export) or "example_value" (Dynamo)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    rows = graph.call_function(operator.mul, (2, 3))
    cols = graph.call_function(operator.add, (rows, -2))
    scale = graph.call_function(operator.mul, (rows, 0.5))
    view = graph.call_method("view", (x, rows, cols))
    scaled = graph.call_function(operator.mul, (view, scale))
    out = graph.call_function(torch.relu, (scaled,))
    graph.output(out)
    with FakeTensorMode():
        flat = torch.empty(24)
        values = {x: flat, rows: 6, cols: 4, scale: 3.0, view: flat.view(6, 4), scaled: flat.view(6, 4) * 3.0}
        values[out] = torch.relu(values[scaled])
    for node, val in values.items():
        node.meta[key] = val
    return torch.fx.GraphModule(nn.Module(), graph)


def _dynamic_graphs(ctx: Context):
    """(graph, description) with symbolic sizes: export with a Dim and Dynamo with dynamic=True (deep adds the
    decomposition of a 3-D MLP, where the Linear's view computes its size with operator.mul)."""
    inputs = (torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(1)),)
    for method in ("export", "dynamo"):
        gm = capture(FlattenBatch().eval(), inputs, method, dynamic=True).gm
        how = "torch.export graph (a Dim on the batch)" if method == "export" else "Dynamo graph (dynamic=True)"
        yield gm, f"the {how} of relu(fc(x.reshape(x.shape[0] * x.shape[1], 4)))"
    spec = SYMFLOAT_PROGRAM  # int(n * 1.0): operator.mul whose recorded value is a SymFloat
    yield program_graph(spec), program_how(spec)
    for key in ("val", "example_value"):  # plain numbers: not SymInts, still not tensors
        yield static_size_graph(key), (
            f"a graph whose sizes were recorded as plain Python numbers in meta[{key!r}]: rows = operator.mul(2, 3) "
            f"(an int, 6), cols = operator.add(rows, -2) (4), scale = operator.mul(rows, 0.5) (a float, 3.0), then "
            f"relu(x.view(rows, cols) * scale)")
    if ctx.deep:  # where size arithmetic comes from without asking: a decomposed Linear on a 3-D input
        gm = capture(ZOO["mlp_3d"].build(), ZOO["mlp_3d"].inputs(), "export_core", dynamic=True).gm
        yield gm, "the export_core graph of the `mlp_3d` model with a symbolic batch size"
        spec = programs.ProgramSpec(("size_symint", "size_symfloat"), "aot_autograd", dynamic=True)
        yield program_graph(spec), program_how(spec)


@CHECKS.check(stage="edge_cases", weight=2)
def size_arithmetic_is_no_npu_op(ctx):
    ("operator.mul/add on SymInt, SymFloat, int and float sizes (export with Dim, dynamic Dynamo, recorded numbers) "
     "is 'cpu'; the reshape it feeds is 'npu'")
    tensor_mul = (program_graph(TENSOR_MUL_PROGRAM),
                  program_how(TENSOR_MUL_PROGRAM) + " (this graph's operator.mul nodes multiply tensors)")
    expect_graph_agrees(ctx, *tensor_mul)  # first: an answer for operator.mul on tensors ...
    asked = [tensor_mul]
    for spec in SIZE_SCALED_PROGRAMS:  # ... and on a tensor and a size: what it computes is a tensor
        scaled = (program_graph(spec), program_how(spec) + " (its last mul multiplies a tensor by a symbolic size)")
        expect_graph_agrees(ctx, *scaled)
        asked.append(scaled)
    for gm, how in _dynamic_graphs(ctx):
        sizes = [n for n in gm.graph.nodes if n.op in CALL_OPS and n.target in (operator.mul, operator.add)
                 and not isinstance(recorded_value(n)[1], torch.Tensor)]
        assert sizes, f"internal: no size arithmetic in {how}"
        submodules = dict(gm.named_modules())
        verdicts = attempt_classify(ctx, gm, how)
        for node in sizes:
            expect_node_agrees(ctx, node, submodules, verdicts, how)
        expect_graph_agrees(ctx, gm, how)
        asked.append((gm, how))
    expect_graph_agrees(ctx, *tensor_mul)  # ... and again after the sizes: neither carries over to the other
    expect_one_support_across_graphs(ctx, asked + [tensor_mul])  # and one support instance asked about them all


STREAM_ROUNDS = 48  # graphs freed one by one: enough for CPython to hand a freed node's id to a new one many times


def _asked(step: str) -> str:
    """A probe step ("stream 5 sin", "target relu", "module Softmax") as the question it was, after "node `act`"."""
    kind_of, _, rest = step.partition(" ")
    if kind_of == "stream":
        index, kind = rest.split()
        return f"of graph {int(index) + 1} of the stream (x -> act = {probes.KIND_TEXT[kind]} -> output)"
    if kind_of == "target":
        return f"after `act.target = torch.{rest}` was set in place (now {probes.KIND_TEXT[rest]})"
    return f"after its submodule was swapped in place for {probes.KIND_TEXT[rest]} (gm.add_module)"


@CHECKS.check(stage="edge_cases", weight=2)
def one_support_answers_each_node_as_it_is_now(ctx):
    ("one NPUOperatorSupport, asked about graphs freed one by one and about nodes changed in place, answers each "
     "node as it is now, with True or False")
    want = probes.probe_one_support_while_nodes_change(ctx.reference, STREAM_ROUNDS)
    got = ctx.probe(probes.probe_one_support_while_nodes_change, STREAM_ROUNDS)
    for mine, right in zip(got["answers"], want["answers"]):
        step, node = right["step"], right["node"]
        expect(mine["is_bool"],
               f"is_node_supported returned {mine['returned']} for node `{node}` {_asked(step)}: it returns "
               f"True or False, a bool (the contract's `-> bool`), not another value that is merely truthy or "
               f"falsy. README.md, 'The contract'.")
        if mine["supported"] == right["supported"]:  # canonical_op of an in-place form may be None or its name
            continue
        said = (f"is_node_supported {mine['returned']} (canonical_op {mine['op']!r}); expected {right['supported']} "
                f"({right['op']!r})")
        kind = step.split()[-1]
        fresh = got["fresh"][kind][node]
        if fresh["supported"] != right["supported"]:
            raise CheckFailed(f"For node `{node}` of x -> act = {probes.KIND_TEXT[kind]} -> output, a new "
                              f"NPUOperatorSupport() answered is_node_supported {fresh['returned']} (canonical_op "
                              f"{fresh['op']!r}); expected {right['supported']} ({right['op']!r}). README.md, "
                              f"'The contract'.")
        if step.startswith("stream"):
            why = ("A new instance answers this node right: each graph was freed before the next was built, and "
                   "CPython gives a new node the id (the memory) of one it freed, so an answer kept under "
                   "id(node) answers for a node that no longer exists.")
        else:
            why = ("FX nodes are mutable: a pass may set node.target or swap a submodule in place, and an answer "
                   "kept per node (under the Node itself or its id) outlives the op it was about.")
        raise CheckFailed(
            f"One NPUOperatorSupport() was asked about {STREAM_ROUNDS} small graphs one after another, each freed "
            f"before the next was built, then about nodes changed in place. For node `{node}` {_asked(step)} it "
            f"answered {said}. {why} Keep nothing on the instance between calls: compute each answer from the node "
            f"as it is now. README.md, 'The contract'.")


REMOVED_FROM_NPU = ("gelu", "add")
# devices, each lacking some kernels, and the graphs asked about on each: any entry of NPU_OPS can be missing,
# the layout ops (t, view, permute, ...) and the NPU's own fused op included
CHANGED_DEVICES = (
    (REMOVED_FROM_NPU, (("residual", "make_fx"), ("residual", "dynamo"))),
    (("t", "view", "permute", "transpose", "reshape", "linear_gelu"),
     (("mlp_3d", "make_fx"), ("fused_linear_gelu", "dynamo"))),
)


def expect_follows_changed_npu(ctx: Context, gm: torch.fx.GraphModule, how: str, removed) -> None:
    """classify(gm) of the attempt imported again while katas.common.npu.NPU_OPS lacks `removed` agrees with the
    reference's canonical ops tested against that set."""
    got = ctx.probe(probes.probe_classify_on_changed_npu, gm, list(removed))
    npu = NPU_OPS - frozenset(removed)
    submodules = dict(gm.named_modules())
    for node in gm.graph.nodes:
        if node.op not in CALL_OPS:
            continue
        op = ctx.reference.canonical_op(node, submodules)
        want = "npu" if op in npu else "cpu"
        if got.get(node.name) == want:
            continue
        if op not in removed:  # the device's change is not what this node is about: is it wrong on the full device?
            expect_node_agrees(ctx, node, submodules, attempt_classify(ctx, gm, how), how)
        lost = f"{op!r} is one of the kernels it lost" if op in removed else f"{op!r} is still in NPU_OPS"
        raise CheckFailed(
            f"The NPU's op set changed: katas.common.npu.NPU_OPS lost {', '.join(removed)} (a device without those "
            f"kernels), then your module was imported and asked. classify on {how} said {got.get(node.name)!r} for "
            f"{node_text(node, submodules)}, expected {want!r}: {lost}. Test membership in katas.common.npu's "
            f"NPU_OPS for every op (`from katas.common.npu import NPU_OPS`, or `npu.NPU_OPS` read when asked): the "
            f"checks change that name only, so NPU_OPS imported from katas.common.npu.device, a set of names written "
            f"out in your own file, or a table of your own that says which ops are always NPU ops (layout ops, the "
            f"fused op) does not follow the device.")


@CHECKS.check(stage="edge_cases", weight=2)
def npu_ops_is_read_from_katas_common(ctx):
    "NPUs without some kernels (gelu and add; layout ops and linear_gelu): with NPU_OPS changed, classify follows it"
    for removed, graphs in CHANGED_DEVICES:
        for name, method in graphs:
            expect_follows_changed_npu(ctx, zoo_graph(name, method), zoo_how(name, method), removed)


# --- in-place forms, dtypes, and generated programs -------------------------------------------------------

# x.relu_(), h.add_(y), h += y (operator.iadd), torch.relu_, torch.ops.aten.relu_ next to their functional forms
INPLACE_STEPS = ("linear", "relu_inplace_method", "add_inplace_method", "add_inplace_operator",
                 "relu_inplace_function", "aten_relu_inplace_packet", "relu_method", "add",
                 "relu_module_inplace_keyword", "relu_function_inplace_keyword")
INPLACE_PROGRAMS = tuple(programs.ProgramSpec(INPLACE_STEPS, capture) for capture in ("symbolic_trace", "dynamo",
                                                                                       "make_fx"))


class AddOut(nn.Module):
    """relu(torch.add(fc(x), x, out=buf)): make_fx records the out= overload aten.add.out, which is 'add'."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        buf = torch.empty_like(x)
        return torch.relu(torch.add(self.fc(x), x, out=buf))


def is_out_overload(node: torch.fx.Node) -> bool:
    return isinstance(node.target, torch._ops.OpOverload) and node.target._overloadname.startswith("out")


@CHECKS.check(stage="edge_cases", weight=2)
def in_place_forms_are_not_their_functional_op(ctx):
    ("in-place forms (x.relu_(), aten.add_.Tensor, operator.iadd) are not relu or add: names are exact, 'cpu'; "
     "nn.ReLU(inplace=True), F.relu(x, inplace=True) and the out= overload aten.add.out are relu and add")
    graphs = [(program_graph(spec), program_how(spec)) for spec in INPLACE_PROGRAMS]
    graphs.append((capture(AddOut().eval(), (torch.randn(2, 4, generator=torch.Generator().manual_seed(1)),),
                           "make_fx").gm,
                   "the make_fx graph of relu(torch.add(fc(x), x, out=torch.empty_like(x))) (aten.add.out)"))
    for gm, how in graphs:
        submodules = dict(gm.named_modules())
        verdicts = attempt_classify(ctx, gm, how)
        for node in gm.graph.nodes:
            if node.op in CALL_OPS and (functional_form(node) is not None or is_out_overload(node)):
                expect_node_agrees(ctx, node, submodules, verdicts, how)
        expect_graph_agrees(ctx, gm, how)


# graphs of NPU ops only, in float64 and float16: support goes by op name, never by dtype
DTYPE_PROGRAMS = (programs.ProgramSpec(("linear", "relu_function", "add", "kata_linear_gelu_overload"), "make_fx",
                                       "float64"),
                  programs.ProgramSpec(("linear", "relu_method", "add", "aten_sigmoid_packet"), "make_fx_pre_dispatch",
                                       "float16"),
                  programs.ProgramSpec(("linear", "relu_module", "add"), "dynamo", "float64"))
# int64, bool and 0-dim tensors of NPU ops (argmax + 1, (h > 0) * (h < 1), relu(h.sum()) * 2): 'npu' like any
# other, in every capture
INT_ZERO_DIM_PROGRAMS = tuple(programs.ProgramSpec(("linear", "int_index_math", "bool_mask_math", "zero_dim"), capture)
                              for capture in ("symbolic_trace", "dynamo", "make_fx", "export"))


@CHECKS.check(stage="edge_cases", weight=2)
def support_ignores_dtype(ctx):
    ("a graph of NPU ops in float64 or float16 is 100% NPU, and int64, bool or 0-dim add/mul/relu are NPU ops: "
     "is_node_supported looks at the op, not the dtype or the shape")
    for spec in DTYPE_PROGRAMS:
        expect_fully_on_npu(ctx, program_graph(spec), program_how(spec))
    for spec in INT_ZERO_DIM_PROGRAMS:
        expect_graph_agrees(ctx, program_graph(spec), program_how(spec))


def expect_graph_unchanged(ctx: Context, gm: torch.fx.GraphModule, how: str) -> None:
    """canonical_op, is_node_supported and classify, asked where the attempt runs, leave the graph as it was."""
    import copy
    # a fresh copy: the worker keeps the graphs it was sent, and an earlier call may have changed its copy already
    changes = ctx.probe(probes.probe_graph_changes, copy.deepcopy(gm))
    expect(not changes, f"after canonical_op, is_node_supported and classify on {how}, the graph had changed: "
                        f"{'; '.join(changes[:5])}{' ...' if len(changes) > 5 else ''}. Nothing modifies the graph "
                        f"(README.md, 'The contract'): not its nodes, their args, nor node.meta, which other passes read; "
                        f"keep your own notes in a dict of your own.")


# kernels a generated device may lack: any NPU op the programs use
REMOVABLE = ("linear", "addmm", "t", "permute", "view", "reshape", "relu", "sigmoid", "add", "mul", "linear_gelu")


@CHECKS.check(stage="edge_cases", weight=3)
def generated_programs_agree_with_reference(ctx):
    ("random small programs (every step kind of the lesson) in every capture, dtype and device, node by node; one "
     "support instance asked about a program and its twin, both ways")
    strategy = programs.program_specs(max_steps=4 if ctx.deep else 3, removable=REMOVABLE)

    def prop(spec) -> None:
        gm = programs.capture_program(spec)
        how = f"the {spec.capture} graph of the program below"
        expect_graph_unchanged(ctx, gm, how)  # first: the calls below may run in this process, on this graph
        if spec.removed:
            expect_follows_changed_npu(ctx, gm, how, spec.removed)
        else:
            expect_graph_agrees(ctx, gm, how)
        twin = programs.twin_program(spec)
        if twin.steps != spec.steps:  # one support instance: the program, its twin, the program again
            first = (gm, how + (" (on the full device)" if spec.removed else ""))
            twin_text = "; ".join(programs.STEP_TEXT[step] for step in twin.steps)
            second = (programs.capture_program(twin), f"the {twin.capture} graph of its twin `{twin_text}` (the "
                                                      f"same capture and dtype: nodes of the same names, other ops)")
            expect_one_support_across_graphs(ctx, [first, second, first])

    fuzz(ctx, strategy, prop, describe=programs.describe_program,
         max_examples=ctx.max_examples if ctx.deep else 4)
