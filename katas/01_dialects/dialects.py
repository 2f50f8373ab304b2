"""Kata 1 — graph dialects. This is the only file you edit for this kata.

Read katas/01_dialects/README.md first: it defines each dialect and every edge case.
Check your work with `make kata N=1`; ask for a hint with `make hint N=1`.
"""
from __future__ import annotations

import enum

import torch
import torch.fx


class Dialect(str, enum.Enum):
    MODULE = "module"        # a call_module node (symbolic_trace of nn.Modules); torch-level calls may sit beside it
    TORCH = "torch"          # torch-level calls and no modules (Dynamo, symbolic_trace of functional code)
    ATEN = "aten"            # aten-level only, and at least one aten/prims op without torch.Tag.core
    CORE_ATEN = "core_aten"  # aten-level only, every aten op tagged torch.Tag.core; custom ops may ride along


class MixedDialectError(ValueError):
    """Raised when one graph (its subgraphs included) holds aten-level nodes next to module- or torch-level
    ones. The message names one node of each level by node.name, in single quotes: 'block_0', 'max_dim'."""


def node_dialect(node: torch.fx.Node) -> Dialect | None:
    """The dialect one node belongs to, or None for a neutral node.

    Neutral: placeholder, get_attr, output, export's `_guards_fn` call_module, shape arithmetic (a call_function
    whose recorded value is a size: a SymInt, SymFloat, SymBool or a plain number, whatever its target, an aten
    overload such as aten.sym_size.int too), custom ops (namespace neither aten nor prims), operator.getitem,
    higher-order ops, grad-mode/autocast switches and functorch's transform bookkeeping (functions of
    torch._functorch.predispatch). An aten OpOverloadPacket is TORCH.
    See README.md, "Classifying one node": the first row that matches decides.
    """
    raise NotImplementedError("node_dialect: classify one node — README.md, 'Classifying one node'")


def detect_dialect(gm: torch.fx.GraphModule) -> Dialect:
    """The dialect of the whole graph, the subgraphs its higher-order ops call included; MixedDialectError
    when aten-level nodes meet module- or torch-level ones. Answer for the graph as it is now (no caching, and
    nothing kept from one call to the next).

    See README.md, "Subgraphs" and "Classifying a graph".
    """
    raise NotImplementedError("detect_dialect: classify a whole graph — README.md, 'Classifying a graph'")
