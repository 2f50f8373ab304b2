"""Mistake: the server warns and counts a fallback only the first time each too-large batch size comes (as Python's
default warning filter would show it once): batches 9, 9, 12 on buckets (1, 2, 4, 8) warn twice and leave
fallbacks at 2, where every call served on the CPU warns and counts: 3 (README.md, 'Buckets'). Blind round 2,
wrong_fallback_once_per_size."""
import torch

from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('larger_batches_fall_back_loudly',)

_right_on_cpu = _ref.BucketedNPU._on_cpu


def _on_cpu(self, x):
    reported = self.__dict__.setdefault("_reported", set())
    if x.shape[0] in reported:
        with torch.no_grad():
            return self.model(x)
    reported.add(x.shape[0])
    return _right_on_cpu(self, x)


_ref.BucketedNPU._on_cpu = _on_cpu
