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

# Call nodes: the kinds of node that call something when the graph runs, and so need a verdict. placeholder,
# get_attr and output only move data in and out of the graph. A call node need not be an op: getitem,
# a higher-order op (cond) or arithmetic on sizes runs too, on the host.
CALL_OPS = ("call_module", "call_function", "call_method")

# call_module: the target is an attribute name the model's author chose ("fc1", "act", "block.0"), so it
# says nothing reliable about the op. The module's class does -- and a subclass of one of these classes only
# when it keeps the class's forward (see _module_op).
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


# The namespaces whose ops the NPU has kernels for: ATen, and its own fused ops (katas/common/npu/device.py compiles
# nothing else). A custom op in any other namespace is a user's own code, whatever it is called.
NPU_NAMESPACES = ("aten", "kata")


def _module_op(module: nn.Module | None) -> str | None:
    """The op of a module class in MODULE_OPS, or of a subclass that keeps that class's forward.

    A subclass that only adds attributes (torch's own NonDynamicallyQuantizableLinear) computes exactly what
    its base class computes. One that overrides forward (a LoRA adapter, torch.ao.nn.qat.Linear, which
    fake-quantizes its weight first) computes something else, so it is no NPU op, even if it calls
    super().forward() somewhere inside.
    """
    for cls in type(module).__mro__:
        if cls in MODULE_OPS:
            return MODULE_OPS[cls] if type(module).forward is cls.forward else None
    return None


def _overload_op(target: torch._ops.OpOverload | torch._ops.OpOverloadPacket) -> str | None:
    """`aten.addmm.default` and `aten.addmm` -> "addmm"; `kata.linear_gelu.default` -> "linear_gelu";
    None for an op of another namespace (`mylib.gelu`)."""
    namespace, name = str(target).split(".")[:2]  # "aten.addmm.default", or "kata.linear_gelu" for a packet
    return name if namespace in NPU_NAMESPACES else None


def _computes_no_tensor(node: torch.fx.Node) -> bool:
    """True if the capture recorded the node's value and it is not a tensor.

    make_fx, export and aot_autograd record it in `meta["val"]`, Dynamo in `meta["example_value"]`;
    symbolic_trace records nothing. With dynamic shapes, sizes are SymInts and arithmetic on them
    (`operator.mul(sym_size, 5)`) is Python run by the host to compute a shape, not a tensor op: it is no
    NPU op even though `operator.mul` on tensors is "mul".
    """
    for key in ("val", "example_value"):
        if key in node.meta:
            return not isinstance(node.meta[key], torch.Tensor)
    return False


def canonical_op(node: torch.fx.Node, submodules: Mapping[str, nn.Module]) -> str | None:
    """The ATen op `node` becomes, without namespace or overload ("linear", "addmm", "gelu", ...).

    - call_module: by the class of `submodules[node.target]` (nn.Linear -> "linear"), never by its name; a
      subclass counts only if it keeps its base class's forward.
    - call_function: an OpOverload / OpOverloadPacket of the aten or kata namespace -> the packet's name; any
      other callable by identity (torch._C._nn.linear, F.relu, torch.relu, operator.add, ...).
    - call_method: the method's name ("t", "relu", "add", "view").
    - None for placeholder, get_attr and output (they do no work); for call nodes whose recorded value is not
      a tensor (arithmetic on SymInt sizes); and for targets this table does not know (an unknown module
      class, a higher-order op such as cond, a custom op of another namespace, a user function kept in the
      graph by torch.fx.wrap).
    """
    if node.op not in CALL_OPS or _computes_no_tensor(node):
        return None
    if node.op == "call_module":
        return _module_op(submodules.get(node.target))  # dotted names ("block.0") are keys of named_modules()
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
        return node.op in CALL_OPS and canonical_op(node, submodules) in NPU_OPS


def classify(gm: torch.fx.GraphModule) -> dict[str, str]:
    """Every call node's name -> "npu" or "cpu", in graph order.

    Call nodes are call_module, call_function and call_method nodes -- operator.getitem, higher-order ops and
    shape arithmetic included: they are no ops, but the graph runs them, on the CPU. placeholder, get_attr and
    output nodes are left out.
    """
    submodules = dict(gm.named_modules())
    support = NPUOperatorSupport()
    return {
        node.name: "npu" if support.is_node_supported(submodules, node) else "cpu"
        for node in gm.graph.nodes
        if node.op in CALL_OPS
    }
