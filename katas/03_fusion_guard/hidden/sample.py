"""`make diff N=3`'s sample: a two-pair MLP where only one pair is safe, captured as a MODULE graph and as a
decomposed graph (export().run_decompositions(): CORE_ATEN), then rewritten by each side's `fuse_linear_gelu` on a fresh capture of its own.

    z = fc1(x); h = gelu(z) + z        fc1's output has two readers: the guard must leave this pair alone
    out = gelu_tanh(fc2(h))            fc2 (no bias) feeds the GELU only: fuse, carrying approximate="tanh"

Each column shows what the pass returned, the graph after it (fused nodes with their keyword arguments), and
running that graph: does it match eager, and how often did the fused kernel really run.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from checker.samples import graph_lines, guarded
from katas.common import capture
from katas.common.ops import LINEAR_GELU_CALLS

CAPTURES = (("symbolic_trace", "MODULE"), ("export_core", "CORE_ATEN"))
INPUT_SHAPE = (2, 4)


class GuardSample(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.act1 = nn.Linear(4, 6), nn.GELU()
        self.fc2, self.act2 = nn.Linear(6, 3, bias=False), nn.GELU(approximate="tanh")

    def forward(self, x):
        z = self.fc1(x)
        h = self.act1(z) + z
        return self.act2(self.fc2(h))


def _model() -> nn.Module:
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return GuardSample().eval()


def _inputs() -> tuple[torch.Tensor]:
    return (torch.randn(*INPUT_SHAPE, generator=torch.Generator().manual_seed(1)),)


def _lines(gm) -> list[str]:
    """graph_lines, plus each node's keyword arguments (where a fused node's `approximate` usually is)."""
    return [line + (f" {dict(node.kwargs)}" if node.kwargs else "")
            for line, node in zip(graph_lines(gm), gm.graph.nodes)]


def _run(captured, want: torch.Tensor) -> str:
    LINEAR_GELU_CALLS.reset()
    with torch.no_grad():
        got = captured.run(*_inputs())
    same = isinstance(got, torch.Tensor) and got.shape == want.shape and torch.allclose(got, want, atol=1e-5)
    return f"matches eager: {'yes' if same else 'NO'}, fused kernel ran {LINEAR_GELU_CALLS.count}x"


def _side(module) -> str:
    with torch.no_grad():
        want = _model()(*_inputs())
    lines = []
    for method, dialect in CAPTURES:
        captured = capture(_model(), _inputs(), method)  # a fresh capture per side: the pass rewrites it in place
        fused = guarded(module.fuse_linear_gelu, captured.gm)
        lines += [f"{dialect} ({method}): fuse_linear_gelu returned {fused}"]
        lines += ["  " + line for line in _lines(captured.gm)]
        lines += [f"  run: {guarded(_run, captured, want)}", ""]
    return "\n".join(lines).rstrip()


def sample_graphs(attempt, reference) -> tuple[str, str]:
    header = (f"z = fc1(x); h = gelu(z) + z; out = gelu_tanh(fc2(h)), input {INPUT_SHAPE}\n"
              "safe: fc2 (no bias) -> gelu_tanh; not safe: fc1, z has 2 readers\n")
    theirs = header + _side(reference)
    mine = header + guarded(_side, attempt)
    return mine, theirs
