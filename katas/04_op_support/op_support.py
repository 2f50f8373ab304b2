"""Kata 4 — which nodes can the NPU run? This is the only file you edit for this kata.

Read katas/04_op_support/README.md first: it defines canonical op names in every dialect, call nodes,
and how CapabilityBasedPartitioner uses your support. Check your work with `make kata N=4`; ask for a hint
with `make hint N=4`.
"""
from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.fx
import torch.nn as nn
from torch.fx.passes.operator_support import OperatorSupportBase

from katas.common.npu import NPU_OPS  # the canonical names of the ops the NPU runs; everything else: CPU


def canonical_op(node: torch.fx.Node, submodules: Mapping[str, nn.Module]) -> str | None:
    """The ATen op `node` becomes, without namespace or overload: "linear", "addmm", "gelu", "add", ...

    - call_module: by the CLASS of `submodules[node.target]` (nn.Linear -> "linear", nn.GELU -> "gelu",
      nn.LayerNorm -> "layer_norm"), never by the attribute name in node.target; a subclass counts only if
      it keeps its base class's forward (torch.ao.nn.qat.Linear overrides it: None).
    - call_function: an OpOverload or OpOverloadPacket of the aten or kata namespace (aten.addmm.default,
      kata.linear_gelu) -> its packet name ("addmm", "linear_gelu"); any other callable by identity
      (torch._C._nn.linear -> "linear", F.relu and torch.relu -> "relu", operator.add -> "add").
    - call_method: the method's name (x.t() -> "t", x.view(...) -> "view").
    - None for placeholder, get_attr and output nodes; for call nodes whose recorded value
      (node.meta["val"] / ["example_value"]) is not a tensor (arithmetic on SymInt sizes); and for targets
      you do not know (higher-order ops, custom ops of other namespaces, a user's own functions).

    `submodules` maps qualified names to modules, as `dict(gm.named_modules())` does.
    See README.md, "What a node becomes".
    """
    raise NotImplementedError("canonical_op: name the op a node becomes — README.md, 'What a node becomes'")


class NPUOperatorSupport(OperatorSupportBase):
    """What CapabilityBasedPartitioner asks: can the NPU run this node?

    True exactly when the node's canonical op is in NPU_OPS. placeholder, get_attr and output nodes are
    never supported (torch's own `OperatorSupport` says True for them — do not copy that).
    See README.md, "Telling the partitioner".
    """

    def is_node_supported(self, submodules: Mapping[str, nn.Module], node: torch.fx.Node) -> bool:
        raise NotImplementedError("is_node_supported: yes exactly for NPU ops — README.md, 'Telling the partitioner'")


def classify(gm: torch.fx.GraphModule) -> dict[str, str]:
    """Every call node's name -> "npu" or "cpu".

    Call nodes are call_module, call_function and call_method nodes -- getitem, higher-order ops and size
    arithmetic included: they are no ops, but the graph runs them, on the CPU. placeholder, get_attr and
    output nodes get no entry. See README.md, "Classifying a graph".
    """
    raise NotImplementedError("classify: 'npu' or 'cpu' for every call node — README.md, 'Classifying a graph'")
