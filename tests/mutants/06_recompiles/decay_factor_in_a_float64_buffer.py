"""Mistake (blind round 6, w22_float64_buffer.py): the running decay factor in a float64 0-dim buffer, multiplied by
rate in place each call. Dynamo's own graph gives the right answers in one graph, but aot_autograd, which
torch.compile's default backend runs before Inductor, does not update a float64 0-dim buffer written in place
(measured on torch 2.13): every call answers proj(x) * 1. README.md, 'Fix': "Keep the buffers float32 or int64"."""
import torch
import torch.nn as nn

from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedRunningMean, fixed_rowwise_normalize = _ref.FixedRunningMean, _ref.fixed_rowwise_normalize

KILLED_BY = ('decaying_head_compiles_once', 'fixes_keep_constructor_arguments')


class FixedDecayingHead(nn.Module):
    def __init__(self, features: int = 4, rate: float = 0.9) -> None:
        super().__init__()
        self.proj = nn.Linear(features, features)
        self.rate = rate
        self.register_buffer("factor", torch.ones((), dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.factor.mul_(self.rate)
        return self.proj(x) * self.factor.to(x.dtype)
