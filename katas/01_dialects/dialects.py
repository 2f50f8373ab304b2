"""Kata 1 — graph dialects. This is the only file you edit for this kata.

Read katas/01_dialects/README.md first: it defines each dialect and every edge case.
Check your work with `make kata N=1`; ask for a hint with `make hint N=1`.
"""
from __future__ import annotations

import enum

import torch
import torch.fx


class Dialect(str, enum.Enum):
    MODULE = "module"        # symbolic_trace of nn.Modules: leaf modules are call_module nodes
    TORCH = "torch"          # Dynamo graphs, symbolic_trace of functional code: torch-level calls
    ATEN = "aten"            # OpOverload targets (make_fx, export, aot_autograd), at least one not core
    CORE_ATEN = "core_aten"  # every OpOverload node tagged torch.Tag.core (export().run_decompositions())


class MixedDialectError(ValueError):
    """Raised when one graph holds aten-level nodes next to module- or torch-level ones."""


def node_dialect(node: torch.fx.Node) -> Dialect | None:
    """The dialect one node belongs to, or None for a neutral node.

    Neutral nodes: placeholder, get_attr, output, operator.getitem, and the `_guards_fn` call_module that
    `torch.export`'s `ep.module()` adds. See README.md, "Classifying one node".
    """
    raise NotImplementedError("node_dialect: classify one node — README.md, 'Classifying one node'")


def detect_dialect(gm: torch.fx.GraphModule) -> Dialect:
    """The dialect of the whole graph; MixedDialectError when aten-level nodes meet module/torch-level ones.

    See README.md, "Classifying a graph".
    """
    raise NotImplementedError("detect_dialect: classify a whole graph — README.md, 'Classifying a graph'")
