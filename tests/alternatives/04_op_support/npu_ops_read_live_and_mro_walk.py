"""Kata 4 — correct attempt B (blind round k04-r1).

Roads taken that differ from attempt A and from the hints:
- NPU_OPS is read from the device module at *call* time (`npu.NPU_OPS`), not bound once at import: the device
  stays the authority even if its set changes after this module was imported.
- call_module: walk the MRO to the first tabled base, accept only if the forward is that base's.
- OpOverload: `target.namespace` / `target._opname`; packet: its qualified name.
- size arithmetic: a call node whose recorded value is a SymInt/SymFloat/SymBool or a plain Python number
  is no op (the lesson: "a torch.SymInt (or an int, a bool)"). Other non-tensor values (tuples for getitem,
  None for grad switches) belong to nodes that are no NPU op in the first place.
"""
from __future__ import annotations

import operator
from collections.abc import Mapping

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.passes.operator_support import OperatorSupportBase

import katas.common.npu as npu
from katas.common.npu import NPU_OPS  # noqa: F401  (kept: the contract names it; the live value is npu.NPU_OPS)

_MODULES = {
    nn.Linear: "linear", nn.GELU: "gelu", nn.ReLU: "relu", nn.Sigmoid: "sigmoid",
    nn.Tanh: "tanh", nn.SiLU: "silu", nn.LayerNorm: "layer_norm", nn.Softmax: "softmax",
}
_FUNCTIONS = {
    torch._C._nn.linear: "linear", torch._C._nn.gelu: "gelu",
    F.relu: "relu", torch.relu: "relu", torch.sigmoid: "sigmoid", torch.tanh: "tanh", F.silu: "silu",
    operator.add: "add", operator.mul: "mul", operator.matmul: "matmul",
    torch.add: "add", torch.mul: "mul", torch.matmul: "matmul",
    torch.Tensor.add: "add", torch.Tensor.mul: "mul", torch.Tensor.relu: "relu",
    torch.Tensor.view: "view", torch.Tensor.reshape: "reshape", torch.Tensor.t: "t",
}
_HOST_SCALARS = (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)


def _is_host_scalar(node: torch.fx.Node) -> bool:
    for key in ("val", "example_value"):
        if key in node.meta:
            return isinstance(node.meta[key], _HOST_SCALARS)
    return False


def canonical_op(node: torch.fx.Node, submodules: Mapping[str, nn.Module]) -> str | None:
    kind = node.op
    if kind not in ("call_module", "call_function", "call_method") or _is_host_scalar(node):
        return None
    if kind == "call_module":
        module = submodules[node.target]
        for cls in type(module).__mro__:
            if cls in _MODULES:
                return _MODULES[cls] if type(module).forward is cls.forward else None
        return None
    if kind == "call_method":
        return node.target
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return target._opname if target.namespace in ("aten", "kata") else None
    if isinstance(target, torch._ops.OpOverloadPacket):
        namespace, name = target._qualified_op_name.split("::")
        return name if namespace in ("aten", "kata") else None
    return _FUNCTIONS.get(target) if getattr(target, "__hash__", None) else None


class NPUOperatorSupport(OperatorSupportBase):
    def is_node_supported(self, submodules: Mapping[str, nn.Module], node: torch.fx.Node) -> bool:
        return canonical_op(node, submodules) in npu.NPU_OPS


def classify(gm: torch.fx.GraphModule) -> dict[str, str]:
    support, submodules = NPUOperatorSupport(), dict(gm.named_modules())
    calls = [n for n in gm.graph.nodes if n.op in ("call_module", "call_function", "call_method")]
    return {n.name: ("npu" if support.is_node_supported(submodules, n) else "cpu") for n in calls}
