"""Mistake (blind round 6 found it; once an alternative from blind round 2, correct_guardsource.py with
FixedDecayingHead's counter kept as a Python FLOAT attribute of the instance): the guard table says a float attribute
becomes an input of Dynamo's graph once it has changed, so 12 calls are 2 graphs with a backend that runs that graph
as it is. torch.compile's default backend runs aot_autograd first, which guards on the float's value again: with
backend="aot_eager" every call compiles again and the ninth raises FailOnRecompileLimitHit. README.md, 'Fix': "A
Python float attribute of the instance ... is not a fix"."""
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
        self.calls = 0.0  # a float attribute: an input of Dynamo's graph once it has changed

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.proj(x) * self.rate ** self.calls
