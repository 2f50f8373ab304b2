"""Hand-picked models the hidden checks use, each small and each showing one feature of graph capture.

`ZOO[name].build()` returns a fresh model in eval mode; `ZOO[name].inputs()` its example inputs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    """Linear -> GELU -> Linear, the running example of every lesson."""

    def __init__(self, d_in: int = 4, d_hidden: int = 8, d_out: int = 3) -> None:
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(d_in, d_hidden), nn.GELU(), nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Residual(nn.Module):
    """x + fc2(gelu(fc1(x))), with a free function (torch.relu) in forward."""

    def __init__(self, d: int = 6) -> None:
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(d, d), nn.GELU(approximate="tanh"), nn.Linear(d, d)

    def forward(self, x):
        return torch.relu(x + self.fc2(self.act(self.fc1(x))))


class NormBlock(nn.Module):
    """LayerNorm then Linear then a max over features: getitem appears in aten graphs."""

    def __init__(self, d: int = 6) -> None:
        super().__init__()
        self.norm, self.fc = nn.LayerNorm(d), nn.Linear(d, d)

    def forward(self, x):
        values, _ = self.fc(self.norm(x)).max(dim=-1)
        return values


class Attention(nn.Module):
    """Single-head self-attention: matmul, transpose, softmax, view; method calls in forward."""

    def __init__(self, d: int = 8) -> None:
        super().__init__()
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.d = d

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        return self.out(scores.softmax(dim=-1) @ v)


class Functional(nn.Module):
    """The MLP written with torch.nn.functional on its own parameters: no leaf modules to call."""

    def __init__(self, d_in: int = 4, d_hidden: int = 8) -> None:
        super().__init__()
        self.w1, self.b1 = nn.Parameter(torch.randn(d_hidden, d_in)), nn.Parameter(torch.randn(d_hidden))
        self.w2 = nn.Parameter(torch.randn(d_in, d_hidden))

    def forward(self, x):
        return F.linear(F.relu(F.linear(x, self.w1, self.b1)), self.w2).sigmoid()


class Pointwise(nn.Module):
    """Only core ATen ops even before decomposition: relu, add, mul."""

    def forward(self, x):
        return torch.relu(x) * 2 + x


class Renamed(nn.Module):
    """Submodule names that do not say what the module is: `proj` and `head` are Linears, `act` is a Softmax,
    and the Sequential's children are called `block.0` and `block.1`. Only the module's type tells the op."""

    def __init__(self, d: int = 6) -> None:
        super().__init__()
        self.proj, self.act = nn.Linear(d, d), nn.Softmax(dim=-1)
        self.block = nn.Sequential(nn.Linear(d, d), nn.SiLU())
        self.head = nn.Linear(d, 3)

    def forward(self, x):
        return self.head(self.block(self.act(self.proj(x))))


class FusedLinearGelu(nn.Module):
    """A model that already calls the fused op: kata::linear_gelu(x, fc1.weight, fc1.bias), then fc2, plus x."""

    def __init__(self, d_in: int = 4, d_hidden: int = 8) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_in, d_hidden), nn.Linear(d_hidden, d_in)

    def forward(self, x):
        return self.fc2(torch.ops.kata.linear_gelu(x, self.fc1.weight, self.fc1.bias)) + x


class TorchFirst(nn.Module):
    """Torch functions before the first module call, and modules nested in a Sequential: symbolic_trace names
    their nodes `block_0`, `block_1` while their targets are `block.0`, `block.1`."""

    def __init__(self, d: int = 6) -> None:
        super().__init__()
        self.block = nn.Sequential(nn.Linear(d, d), nn.GELU())

    def forward(self, x):
        return self.block(torch.tanh(x) * 2).softmax(dim=-1)


class SplitGate(nn.Module):
    """No parameters: rows of (batch, tokens) split in two halves, one gating the other. export keeps
    aten.reshape and aten.chunk, which are neither core ATen nor in export's default decomposition table
    (run_decompositions() lowers them anyway, to view and split_with_sizes). Exported with a dynamic batch, the
    reshape's sizes become SymInt arithmetic: aten.sym_size.int and operator.mul nodes."""

    def forward(self, x):
        batch, tokens, features = x.shape
        a, b = x.reshape(batch * tokens, features).chunk(2, dim=-1)
        return (torch.relu(a) * b).reshape(batch, tokens, -1)


class CondBranches(nn.Module):
    """torch.cond on the data. The branches hold every Linear, so the top-level graph has only the predicate
    (amax, gt: both core ATen), the cond node and a getitem. symbolic_trace cannot trace it."""

    def __init__(self, d: int = 4) -> None:
        super().__init__()
        self.pos, self.neg = nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x):
        return torch.cond(x.amax() > 0, lambda t: torch.relu(self.pos(t)), lambda t: torch.sigmoid(self.neg(t)), (x,))


class NoGradBlock(nn.Module):
    """A Linear under `torch.no_grad()`, then relu and a residual add. export puts the block in a subgraph of the
    higher-order op wrap_with_set_grad_enabled; make_fx(pre_dispatch=True) records torch._C._set_grad_enabled
    calls around it."""

    def __init__(self, d: int = 4) -> None:
        super().__init__()
        self.frozen = nn.Linear(d, d)

    def forward(self, x):
        with torch.no_grad():
            h = self.frozen(x)
        return torch.relu(h) + x


class AutocastBlock(nn.Module):
    """A Linear under torch.autocast (bfloat16 on CPU), cast back with .float(). export puts the block in a
    subgraph of wrap_with_autocast; make_fx(pre_dispatch=True) records _enter_autocast / _exit_autocast calls;
    run_decompositions() keeps aten._assert_tensor_metadata, which is not core ATen."""

    def __init__(self, d: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = self.fc(x)
        return torch.relu(h.float())


class Profiled(nn.Module):
    """relu and mul inside torch.profiler.record_function: make_fx records the profiler's own operators
    (profiler._record_function_enter_new, profiler._record_function_exit), which live outside the aten namespace.
    (Dynamo ignores record_function, with a warning: capture this one with make_fx or export.)"""

    def forward(self, x):
        with torch.profiler.record_function("scaled_relu"):
            return torch.relu(x) * 2


class AtenPacket(nn.Module):
    """User code calling torch.ops.aten.relu, the packet (no overload), before a Linear: symbolic_trace and Dynamo
    keep the packet as the node's target; make_fx and export resolve it to aten.relu.default."""

    def __init__(self, d: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return self.fc(torch.ops.aten.relu(x))


class HalfLowered(nn.Module):
    """Deliberately mixed: a call to the ATen overload aten.max.dim, a getitem, then nested modules (`block.0`,
    `block.1`). symbolic_trace gives aten-level and module-level nodes in one graph, never next to each other."""

    def __init__(self, d: int = 4) -> None:
        super().__init__()
        self.block = nn.Sequential(nn.Linear(1, d), nn.ReLU())

    def forward(self, x):
        return self.block(torch.ops.aten.max.dim(x, -1, True)[0])


class CondHalfLowered(nn.Module):
    """Deliberately mixed, inside a branch: torch.cond whose true branch calls the ATen overload
    aten.sin.default. Under Dynamo the top-level graph is torch-level and the branch subgraph holds an aten-level
    node."""

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: torch.ops.aten.sin.default(t), lambda t: torch.cos(t), (x,))


class PrivateNames(nn.Module):
    """Submodules with unusual attribute names, `_fc` (leading underscore) and `Act` (capitalised): their
    call_module nodes are the model like any other; only export's `_guards_fn` is bookkeeping."""

    def __init__(self, d: int = 4) -> None:
        super().__init__()
        self._fc, self.Act = nn.Linear(d, d), nn.GELU()

    def forward(self, x):
        return self.Act(self._fc(x))


@dataclass(frozen=True)
class ZooModel:
    name: str
    factory: Callable[[], nn.Module]
    input_shape: tuple[int, ...]

    def build(self) -> nn.Module:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            return self.factory().eval()

    def inputs(self) -> tuple[torch.Tensor, ...]:
        return (torch.randn(*self.input_shape, generator=torch.Generator().manual_seed(1)),)


ZOO = {
    model.name: model
    for model in (
        ZooModel("mlp", MLP, (2, 4)),
        ZooModel("mlp_3d", MLP, (2, 5, 4)),
        ZooModel("residual", Residual, (3, 6)),
        ZooModel("norm_block", NormBlock, (3, 6)),
        ZooModel("attention", Attention, (2, 5, 8)),
        ZooModel("functional", Functional, (3, 4)),
        ZooModel("pointwise", Pointwise, (3, 4)),
        ZooModel("renamed", Renamed, (3, 6)),
        ZooModel("fused_linear_gelu", FusedLinearGelu, (2, 3, 4)),
        ZooModel("torch_first", TorchFirst, (3, 6)),
        ZooModel("split_gate", SplitGate, (2, 3, 4)),
        ZooModel("cond_branches", CondBranches, (3, 4)),
        ZooModel("no_grad_block", NoGradBlock, (3, 4)),
        ZooModel("autocast_block", AutocastBlock, (3, 4)),
        ZooModel("profiled", Profiled, (3, 4)),
        ZooModel("aten_packet", AtenPacket, (3, 4)),
        ZooModel("half_lowered", HalfLowered, (3, 4)),
        ZooModel("cond_half_lowered", CondHalfLowered, (3, 4)),
        ZooModel("private_names", PrivateNames, (3, 4)),
    )
}


# --- kata 4: module subclasses at depth 1 and 2 (importable, so graphs that keep them whole can cross to the
# worker). A subclass is its base's op only if `type(module).forward is Base.forward`.

class KeepsLinear(nn.Linear):
    """Depth 1, keeps nn.Linear.forward (only a new name): a linear."""


class KeepsKeepsLinear(KeepsLinear):
    """Depth 2, keeps nn.Linear.forward through its parent: a linear."""


class ScaledLinear(nn.Linear):
    """Depth 1, overrides forward (calls super().forward, then scales): no NPU op."""

    def forward(self, x):
        return super().forward(x) * 0.5


class InheritsScaledLinear(ScaledLinear):
    """Depth 2, defines no forward of its own but inherits ScaledLinear's: no NPU op."""


class RestoresLinear(ScaledLinear):
    """Depth 2, whose forward is nn.Linear.forward again (assigned in its body): a linear."""

    forward = nn.Linear.forward


class TagMixin:
    """A mixin with no forward: a class that lists it first still takes nn.Linear.forward through its MRO."""

    tag = "npu"


class MixinFirstLinear(TagMixin, nn.Linear):
    """A mixin first, nn.Linear second: __bases__[0] is the mixin, the MRO still reaches nn.Linear, and the forward is
    nn.Linear.forward: a linear."""


class DoublingMixin:
    """A mixin whose forward doubles its class's next forward."""

    def forward(self, x):
        return 2 * super().forward(x)


class MixinOverridesLinear(DoublingMixin, nn.Linear):
    """A mixin first that brings its own forward: an nn.Linear subclass that does not keep nn.Linear.forward."""


class KeepsReLU(nn.ReLU):
    """Depth 1 activation subclass that keeps nn.ReLU.forward: a relu."""


class ShiftedReLU(KeepsReLU):
    """Depth 2 activation subclass that overrides forward: no NPU op."""

    def forward(self, x):
        return super().forward(x - 0.1)


# --- kata 3: GELU subclasses (importable, so graphs that keep them whole can cross to the worker). A subclass is a
# GELU only if `type(module).forward is nn.GELU.forward`; torch itself defines none, so only a custom Tracer that
# keeps them whole (or a hand-built graph) shows one as a call_module node.

class KeepsGELU(nn.GELU):
    """Keeps nn.GELU.forward (only a new name): a GELU, with its own `approximate`."""


class ShiftedGELU(nn.GELU):
    """Overrides forward: gelu(x - 0.5) is no GELU of x, though isinstance(module, nn.GELU) holds."""

    def forward(self, x):
        return super().forward(x - 0.5)


class KeepsKeepsGELU(KeepsGELU):
    """Depth 2, keeps nn.GELU.forward through its parent: a GELU."""


class InheritsShiftedGELU(ShiftedGELU):
    """Depth 2, defines no forward of its own but inherits ShiftedGELU's: no GELU."""


class RestoresGELU(ShiftedGELU):
    """Depth 2, whose forward is nn.GELU.forward again (assigned in its body): a GELU."""

    forward = nn.GELU.forward
