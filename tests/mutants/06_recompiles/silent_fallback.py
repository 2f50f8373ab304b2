"""Mistake: a batch past the largest bucket runs on the CPU and is counted, but nothing warns."""
import torch

from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('larger_batches_fall_back_loudly', 'random_models_and_batches')


def _on_cpu(self, x):
    self.fallbacks += 1
    with torch.no_grad():
        return self.model(x)


_ref.BucketedNPU._on_cpu = _on_cpu
