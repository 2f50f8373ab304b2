"""Mistake: the call counter stays a Python int and forward wraps it in torch.tensor(...) each
call. Dynamo still reads the int to build that tensor, so it still guards on its value."""
import torch

from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('decaying_head_compiles_once', 'fixes_keep_constructor_arguments')


class FixedDecayingHead(_ref.FixedDecayingHead):
    def __init__(self, features: int = 4, rate: float = 0.9) -> None:
        super().__init__(features, rate)
        del self.calls
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.proj(x) * self.rate ** torch.tensor(self.calls)
