"""Mistake: the loop moves into a torch.compiler.disable helper: nothing recompiles, because
nothing is compiled."""
import torch

from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('rowwise_normalize_serves_every_batch',)


@torch.compiler.disable
def _normalize_eagerly(x):
    return torch.stack([x[i] / x[i].norm().clamp_min(1e-6) for i in range(x.shape[0])])


def fixed_rowwise_normalize(x):
    return _normalize_eagerly(x)
