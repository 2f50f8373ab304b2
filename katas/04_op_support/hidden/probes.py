"""Probes for kata 4's checks: the questions that must be asked where the attempt's code runs.

A probe takes the attempt module and plain data (or a graph) and returns plain data. It asserts nothing and
knows no right answer; checks.py judges.
"""
from __future__ import annotations

import importlib.util
import itertools
import operator
import sys
from types import ModuleType
from typing import Any

import torch
import torch.fx

_fresh_ids = itertools.count()


# --- custom ops of a user's own library whose namespace merely starts like the NPU's ---------------------------
# Registered wherever this file loads: in the checks' process (checks.py loads it) and in the worker, which loads it
# on its first probe (`probe_user_ops_registered`), before any graph holding these ops crosses to it.

def _katalib_gelu(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(1.702 * x)


def _atenlib_relu(x: torch.Tensor) -> torch.Tensor:
    return x.clamp_min(0)


USER_OPS = {"katalib::gelu": _katalib_gelu, "atenlib::relu": _atenlib_relu}


def register_user_ops() -> None:
    """torch.ops.katalib.gelu and torch.ops.atenlib.relu: a user's custom ops (torch.library), once per process."""
    for qualname, fn in USER_OPS.items():
        namespace, name = qualname.split("::")
        if hasattr(getattr(torch.ops, namespace), name):
            continue
        op = torch.library.custom_op(qualname, mutates_args=())(fn)
        op.register_fake(lambda x: torch.empty_like(x))


register_user_ops()


def probe_user_ops_registered(attempt: ModuleType) -> bool:
    """Nothing but loading this file where the attempt runs, so its user ops exist there (they do now)."""
    return all(hasattr(getattr(torch.ops, q.split("::")[0]), q.split("::")[1]) for q in USER_OPS)


def probe_fresh_canonical_op(attempt: ModuleType, gm: torch.fx.GraphModule, node_name: str) -> object:
    """canonical_op of node `node_name` asked of a freshly imported copy of the attempt, which has seen no other
    graph: a str or None, else the repr of what it returned."""
    node = next(n for n in gm.graph.nodes if n.name == node_name)
    got = _fresh_copy(attempt).canonical_op(node, dict(gm.named_modules()))
    return got if got is None or isinstance(got, str) else repr(got)


def _fresh_copy(attempt: ModuleType) -> ModuleType:
    """A new instance of the attempt's module, imported from its file now (its module-level code runs again)."""
    name = f"kata04_attempt_fresh_{next(_fresh_ids)}"
    spec = importlib.util.spec_from_file_location(name, attempt.__file__)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and typing look their module up while the file runs
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def probe_classify_on_changed_npu(attempt: ModuleType, gm: torch.fx.GraphModule,
                                  removed_ops: list[str]) -> dict[str, str]:
    """classify(gm) of the attempt imported while `katas.common.npu.NPU_OPS` lacks `removed_ops` (an NPU whose
    firmware has no such kernels), as {node name: verdict value}. NPU_OPS is restored afterwards."""
    import katas.common.npu as npu

    original = npu.NPU_OPS
    npu.NPU_OPS = original - frozenset(removed_ops)
    try:
        verdicts = _fresh_copy(attempt).classify(gm)
        return {str(name): str(getattr(verdict, "value", verdict)) for name, verdict in dict(verdicts).items()}
    finally:
        npu.NPU_OPS = original


def _graph_state(gm: torch.fx.GraphModule) -> dict[str, tuple]:
    """What each node is: op, target, args, kwargs, and its meta (keys, and each value by identity)."""
    return {node.name: (node.op, str(node.target), repr(node.args), repr(node.kwargs),
                        tuple(sorted((str(key), id(val)) for key, val in node.meta.items())))
            for node in gm.graph.nodes}


def probe_graph_changes(attempt: ModuleType, gm: torch.fx.GraphModule) -> list[str]:
    """Call canonical_op and is_node_supported on every node, then classify(gm); return what changed in the graph
    (nodes added, removed or changed: op, target, args, kwargs, node.meta keys or values), one line each."""
    before = _graph_state(gm)
    submodules = dict(gm.named_modules())
    support = attempt.NPUOperatorSupport()
    for node in list(gm.graph.nodes):
        attempt.canonical_op(node, submodules)
        support.is_node_supported(submodules, node)
    attempt.classify(gm)
    after = _graph_state(gm)
    fields = ("op", "target", "args", "kwargs", "meta")
    changes = [f"node `{name}` was removed" for name in before if name not in after]
    changes += [f"node `{name}` was added" for name in after if name not in before]
    for name in before.keys() & after.keys():
        for field, old, new in zip(fields, before[name], after[name]):
            if old != new:
                if field == "meta":
                    old_keys, new_keys = dict(old), dict(new)
                    added = sorted(new_keys.keys() - old_keys.keys())
                    gone = sorted(old_keys.keys() - new_keys.keys())
                    swapped = sorted(k for k in old_keys.keys() & new_keys.keys() if old_keys[k] != new_keys[k])
                    changes.append(f"node `{name}`.meta: keys added {added}, removed {gone}, replaced {swapped}")
                else:
                    changes.append(f"node `{name}`.{field}: {old} -> {new}")
    return sorted(changes)


def probe_fresh_classify(attempt: ModuleType, gm: torch.fx.GraphModule) -> dict[str, str]:
    """classify(gm) of a freshly imported copy of the attempt, which has classified no other graph, as
    {node name: verdict value}."""
    verdicts = _fresh_copy(attempt).classify(gm)
    return {str(name): str(getattr(verdict, "value", verdict)) for name, verdict in dict(verdicts).items()}


# --- a module class that borrows nn.Linear's forward without subclassing nn.Linear ------------------------------
# Built where the attempt runs (the class lives in this file, which the worker loads but cannot unpickle from).

class BorrowsLinearForward(torch.nn.Module):
    """No subclass of nn.Linear (nor of any class of the lesson's table), but its body says
    `forward = nn.Linear.forward`: it computes a linear map, yet it is no module class of the table."""

    forward = torch.nn.Linear.forward

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 4, generator=torch.Generator().manual_seed(3)) * 0.3)
        self.bias = torch.nn.Parameter(torch.zeros(4))


class _BorrowsModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc, self.act = BorrowsLinearForward(), torch.nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class _KeepsBorrower(torch.fx.Tracer):
    def is_leaf_module(self, m: torch.nn.Module, qualname: str) -> bool:
        return isinstance(m, BorrowsLinearForward) or super().is_leaf_module(m, qualname)


def borrowed_forward_graph() -> torch.fx.GraphModule:
    """act(fc(x)), fc a BorrowsLinearForward kept whole as one call_module node by a custom tracer."""
    model = _BorrowsModel().eval()
    return torch.fx.GraphModule(model, _KeepsBorrower().trace(model))


def answers_of(module: ModuleType, gm: torch.fx.GraphModule) -> dict[str, list]:
    """{call node name: [canonical_op (a str, None, or a repr), is_node_supported, classify's verdict]}."""
    submodules = dict(gm.named_modules())
    support = module.NPUOperatorSupport()
    verdicts = {str(k): str(getattr(v, "value", v)) for k, v in dict(module.classify(gm)).items()}
    answers = {}
    for node in gm.graph.nodes:
        if node.op in ("call_module", "call_function", "call_method"):
            op = module.canonical_op(node, submodules)
            answers[node.name] = [op if op is None or isinstance(op, str) else repr(op),
                                  bool(support.is_node_supported(submodules, node)), verdicts.get(node.name)]
    return answers


def probe_borrowed_forward(attempt: ModuleType) -> dict[str, list]:
    """The attempt's answers on `borrowed_forward_graph()`, built where the attempt runs."""
    return answers_of(attempt, borrowed_forward_graph())


# --- one support instance, nodes that come and go or change in place ----------------------------------------------
# A backend keeps one NPUOperatorSupport while graphs come and go: CPython hands a freed node's id (and memory) to
# the next node it makes, and a pass may set node.target or swap a submodule in place. An answer kept per node,
# under id(node) or the Node itself, then answers for a node that is gone or has changed.

# NPU op, CPU op (as call_function, then as call_module), and a call node that is no op
STREAM_KINDS = ("relu", "sin", "ReLU", "Softmax", "getitem")
KIND_TEXT = {"relu": "torch.relu(x)", "relu_": "torch.relu_(x)", "sin": "torch.sin(x)",
             "ReLU": "an nn.ReLU() submodule", "Softmax": "an nn.Softmax(-1) submodule", "getitem": "x[0]"}
_FUNCTIONS = {"relu": torch.relu, "relu_": torch.relu_, "sin": torch.sin}


def _module_of(kind: str) -> torch.nn.Module:
    return torch.nn.ReLU() if kind == "ReLU" else torch.nn.Softmax(-1)


def one_op_graph(kind: str) -> torch.fx.GraphModule:
    """x -> act -> output, where the node `act` is `kind` (KIND_TEXT): the same node names whatever the op."""
    root = torch.nn.Module()
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    if kind == "getitem":
        act = graph.create_node("call_function", operator.getitem, (x, 0), name="act")
    elif kind in _FUNCTIONS:
        act = graph.create_node("call_function", _FUNCTIONS[kind], (x,), name="act")
    else:
        root.add_module("act", _module_of(kind))
        act = graph.create_node("call_module", "act", (x,), name="act")
    graph.output(act)
    return torch.fx.GraphModule(root, graph)


def _answer(module: ModuleType, support: Any, gm: torch.fx.GraphModule, node: torch.fx.Node, step: str) -> dict:
    submodules = dict(gm.named_modules())
    op = module.canonical_op(node, submodules)
    got = support.is_node_supported(submodules, node)
    return {"step": step, "node": node.name, "op": op if op is None or isinstance(op, str) else repr(op),
            "supported": bool(got), "is_bool": type(got) is bool, "returned": repr(got)[:80]}


def probe_one_support_while_nodes_change(module: ModuleType, rounds: int) -> dict:
    """ONE module.NPUOperatorSupport() asked about `rounds` graphs one_op_graph(kind), kinds in STREAM_KINDS order,
    each graph freed and collected before the next is built; then about one node rewritten in place (target
    torch.relu_ -> torch.relu -> torch.sin) and one submodule swapped (nn.ReLU -> nn.Softmax -> nn.ReLU).
    {"answers": every answer in order, {"step", "node", "op" (canonical_op), "supported", "is_bool", "returned"};
    "fresh": {kind: {node name: answer}} of a new instance on a new graph of each kind (KIND_TEXT)}. Run on the
    reference too, it gives the right answers (the reference keeps nothing between calls)."""
    import gc

    fresh = {}
    for kind in KIND_TEXT:
        gm = one_op_graph(kind)
        fresh[kind] = {node.name: _answer(module, module.NPUOperatorSupport(), gm, node, kind) for node in gm.graph.nodes}
    support = module.NPUOperatorSupport()
    answers = []
    for i in range(rounds):
        kind = STREAM_KINDS[i % len(STREAM_KINDS)]
        gm = one_op_graph(kind)
        for node in list(gm.graph.nodes):
            answers.append(_answer(module, support, gm, node, f"stream {i} {kind}"))
        del gm, node
        gc.collect()
    gm = one_op_graph("relu_")
    act = next(n for n in gm.graph.nodes if n.name == "act")
    for kind in ("relu_", "relu", "sin"):
        act.target = _FUNCTIONS[kind]
        answers.append(_answer(module, support, gm, act, f"target {kind}"))
    gm = one_op_graph("ReLU")
    act = next(n for n in gm.graph.nodes if n.name == "act")
    for kind in ("ReLU", "Softmax", "ReLU"):
        gm.add_module("act", _module_of(kind))
        answers.append(_answer(module, support, gm, act, f"module {kind}"))
    return {"answers": answers, "fresh": fresh}
