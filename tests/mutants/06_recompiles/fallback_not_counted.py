"""Mistake: a batch past the largest bucket warns but is not counted in fallbacks."""
import torch

from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('buckets_in_any_order', 'larger_batches_fall_back_loudly', 'random_models_and_batches')


_right_on_cpu = _ref.BucketedNPU._on_cpu


def _on_cpu(self, x):
    out = _right_on_cpu(self, x)
    self.fallbacks -= 1
    return out


_ref.BucketedNPU._on_cpu = _on_cpu
