"""Mistake: the vectorised fix divides by the norm without the suspect's 1e-6 floor: a row of zeros
becomes NaN instead of zeros."""
import torch

from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('rowwise_normalize_serves_every_batch',)


def fixed_rowwise_normalize(x):
    return x / torch.linalg.vector_norm(x, dim=1, keepdim=True)
