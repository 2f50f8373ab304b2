"""Mistake: the decay's call counter moves out of the module into one tensor at module level, which compiles to
one graph for every call but is shared by every FixedDecayingHead (__init__ starts the count afresh). One
instance alone gives DecayingHead's answers; two instances share one count: after A's first call, B's first call
returns proj(x) * 0.9 ** 2 where DecayingHead returns proj(x) * 0.9. State belongs to the instance, in its
buffers (README.md, 'Fix')."""
import torch
import torch.nn as nn

from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('each_instance_keeps_its_own_state',)

_CALLS = torch.zeros((), dtype=torch.int64)


class FixedDecayingHead(nn.Module):
    def __init__(self, features: int = 4, rate: float = 0.9) -> None:
        super().__init__()
        self.proj = nn.Linear(features, features)
        self.rate = rate
        _CALLS.zero_()

    def forward(self, x):
        _CALLS.add_(1)
        return self.proj(x) * self.rate ** _CALLS
