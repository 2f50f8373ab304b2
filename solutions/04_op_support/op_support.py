"""Reference solution for kata 4: which nodes of an FX graph can the simulated NPU run?

The NPU's table (`katas.common.npu.NPU_OPS`) holds canonical op names: the ATen op a node becomes, without
namespace or overload. The whole job is to compute that name correctly in every graph dialect, because the
same Linear shows up as a call_module `fc1`, a call_function on the builtin `torch._C._nn.linear`, or an
OpOverload `aten.addmm.default` depending on who captured the graph. Matching the wrong representation does
not fail loudly: it silently sends every node to the CPU.
"""
from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any, Callable

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.passes.operator_support import OperatorSupportBase

from katas.common.npu import NPU_OPS

# Node kinds that do work. placeholder, get_attr and output only move data in and out of the graph.
COMPUTE_OPS = ("call_module", "call_function", "call_method")

# call_module: the target is an attribute name the model's author chose ("fc1", "act", "block.0"), so it
# says nothing reliable about the op. The module's class does.
MODULE_OPS: dict[type[nn.Module], str] = {
    nn.Linear: "linear",
    nn.GELU: "gelu",
    nn.ReLU: "relu",
    nn.Sigmoid: "sigmoid",
    nn.Tanh: "tanh",
    nn.SiLU: "silu",
    nn.LayerNorm: "layer_norm",
    nn.Softmax: "softmax",
}

# call_function above aten level (Dynamo, symbolic_trace): the target is the Python callable itself, so it
# is resolved by identity. Its str() is a repr such as "<built-in function linear>", never an op name, and
# its __name__ would also accept any user function that happens to be called `gelu`.
FUNCTION_OPS: dict[Callable[..., Any], str] = {
    F.linear: "linear",  # F.linear is the builtin torch._C._nn.linear
    torch.addmm: "addmm",
    torch.mm: "mm",
    torch.matmul: "matmul",
    operator.matmul: "matmul",
    torch.t: "t",
    torch.permute: "permute",
    torch.transpose: "transpose",
    torch.reshape: "reshape",
    F.gelu: "gelu",  # the builtin torch._C._nn.gelu
    F.relu: "relu",
    torch.relu: "relu",
    torch.sigmoid: "sigmoid",
    F.sigmoid: "sigmoid",
    torch.tanh: "tanh",
    F.tanh: "tanh",
    F.silu: "silu",
    torch.add: "add",
    operator.add: "add",
    torch.mul: "mul",
    operator.mul: "mul",
    # ops the NPU cannot run keep their names too, so a CPU verdict can say what the node is
    operator.getitem: "getitem",
    operator.sub: "sub",
    torch.sub: "sub",
    operator.truediv: "div",
    torch.div: "div",
    F.layer_norm: "layer_norm",
    F.softmax: "softmax",
    torch.softmax: "softmax",
    torch.sin: "sin",
    torch.cumsum: "cumsum",
}


def _overload_op(target: torch._ops.OpOverload | torch._ops.OpOverloadPacket) -> str:
    """`aten.addmm.default` and `aten.addmm` -> "addmm"; `kata.linear_gelu.default` -> "linear_gelu"."""
    packet = target.overloadpacket if isinstance(target, torch._ops.OpOverload) else target
    return packet.__name__


def canonical_op(node: torch.fx.Node, submodules: Mapping[str, nn.Module]) -> str | None:
    """The ATen op `node` becomes, without namespace or overload ("linear", "addmm", "gelu", ...).

    - call_module: by the type of `submodules[node.target]` (nn.Linear -> "linear"), never by its name.
    - call_function: OpOverload / OpOverloadPacket -> the packet's name; any other callable by identity
      (torch._C._nn.linear, F.relu, torch.relu, operator.add, ...).
    - call_method: the method's name ("t", "relu", "add", "view").
    - None for placeholder, get_attr and output (they do no work), and for targets this table does not know
      (an unknown module class, a user function kept in the graph by torch.fx.wrap).
    """
    if node.op == "call_module":
        module = submodules.get(node.target)  # dotted names ("block.0") are keys of named_modules() too
        return MODULE_OPS.get(type(module)) if module is not None else None
    if node.op == "call_method":
        return node.target
    if node.op == "call_function":
        if isinstance(node.target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
            return _overload_op(node.target)
        try:
            return FUNCTION_OPS.get(node.target)
        except TypeError:  # an unhashable callable: not one of the functions above
            return None
    return None


class NPUOperatorSupport(OperatorSupportBase):
    """Says yes exactly to the nodes whose canonical op is in NPU_OPS.

    Unlike torch's `OperatorSupport`, whose default answer for placeholder, get_attr and output nodes is
    True, this never supports a node that is not an op: with `allows_single_node_partition=True` the
    partitioner would otherwise pull the graph's inputs and output into an NPU partition.
    """

    def is_node_supported(self, submodules: Mapping[str, nn.Module], node: torch.fx.Node) -> bool:
        return node.op in COMPUTE_OPS and canonical_op(node, submodules) in NPU_OPS


def classify(gm: torch.fx.GraphModule) -> dict[str, str]:
    """Every compute node's name -> "npu" or "cpu", in graph order.

    Compute nodes are call_module, call_function (operator.getitem included) and call_method nodes;
    placeholder, get_attr and output nodes are left out.
    """
    submodules = dict(gm.named_modules())
    support = NPUOperatorSupport()
    return {
        node.name: "npu" if support.is_node_supported(submodules, node) else "cpu"
        for node in gm.graph.nodes
        if node.op in COMPUTE_OPS
    }
