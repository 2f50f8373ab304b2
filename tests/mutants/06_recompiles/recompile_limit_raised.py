"""Mistake: the list stays, and the fix raises torch._dynamo.config.recompile_limit so that 12
lengths fit. A setting changes every compile in the process; the checks compile with the defaults."""
import torch

from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('running_mean_stops_recompiling',)


import torch._dynamo

torch._dynamo.config.recompile_limit = 64


class FixedRunningMean(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.seen = []

    def forward(self, x):
        self.seen.append(x)
        return torch.stack(self.seen).mean(0)
