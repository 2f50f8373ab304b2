"""Kata 3 — fuse Linear -> GELU, only where it is safe. This is the only file you edit for this kata.

Read katas/03_fusion_guard/README.md first: it explains the pass step by step and lists every edge case.
Check your work with `make kata N=3`; ask for a hint with `make hint N=3`.
"""
from __future__ import annotations

import torch
import torch.fx
import torch.nn as nn  # noqa: F401 - you will want nn.Linear and nn.GELU (README: which modules are a Linear)

# Importing katas.common.ops registers the fused op. LINEAR_GELU is the node target to create:
#     LINEAR_GELU(x, weight, bias, approximate="none")  ==  F.gelu(F.linear(x, weight, bias), approximate=...)
from katas.common.ops import LINEAR_GELU  # noqa: F401 - torch.ops.kata.linear_gelu.default


def fuse_linear_gelu(gm: torch.fx.GraphModule) -> int:
    """Fuse every safe Linear -> GELU pair of `gm` into one call_function node on LINEAR_GELU.

    Contract (README.md, "The contract"):
    - rewrites `gm` in place and returns the number of pairs fused (an int);
    - each fused pair becomes ONE node `LINEAR_GELU(x, weight, bias, approximate=...)`, carrying the GELU's
      `approximate` ("none" or "tanh"); `bias` is None for a Linear without bias;
    - works on the graph it receives: MODULE (call_module nn.Linear -> nn.GELU or F.gelu; weights through
      get_attr nodes; a subclass counts only if it keeps the base class's forward), TORCH
      (torch._C._nn.linear -> torch._C._nn.gelu), ATEN graphs that keep aten.linear (aten.linear ->
      aten.gelu) and decomposed graphs, ATEN or CORE_ATEN (aten.addmm(b, x, t(w)) / aten.mm(x, t(w)) ->
      aten.gelu, with an aten.view between product and GELU for inputs of more than two dimensions);
    - fuses a pair only when the Linear's output is read by the GELU and by nothing else;
    - where the graph records values, the fused node records its own under the capture's meta key (Dynamo:
      "example_value", make_fx / export / aot_autograd: "val"), with its shape and the graph's dtype;
    - leaves every other node alone (placeholders too, even unread ones), erases the nodes the rewrite leaves
      unused, passes gm.graph.lint(), and calls gm.recompile() so that calling gm runs the new graph;
    - a second call finds nothing to fuse and returns 0.
    """
    raise NotImplementedError("fuse_linear_gelu: match, guard, rewrite, clean up — README.md, 'What a fusion pass is'")


def unfused_pairs(gm: torch.fx.GraphModule) -> list[tuple[str, str]]:
    """Every GELU still in `gm`, in graph order, as (node name, why it is not fused).

    Contract (README.md, "What the pass leaves, and why"):
    - a GELU is a GELU node in any dialect, or the tanh formula written out (report its last multiply);
    - the reason is "safe" (its Linear has no other reader: a pass should have fused it), "other_readers" (the
      Linear's output, or the view of it the GELU reads, has another reader), "not_a_linear" (it reads anything
      else, Conv1D's untransposed addmm included) or "written_out" (the formula);
    - a fused node is not reported; `gm` is not changed.
    """
    raise NotImplementedError("unfused_pairs: README.md, 'What the pass leaves, and why'")
