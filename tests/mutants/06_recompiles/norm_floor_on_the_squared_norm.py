"""Mistake: the vectorised fix puts the 1e-6 floor on the squared norm (rsqrt of the clamped sum of squares),
which is a floor of 1e-3 on the norm. A row of zeros and every row of norm 1e-3 or more get the suspect's
answer; a row of norm 1e-5 is divided by 1e-3 instead of by its norm: (6e-6, 8e-6) becomes (0.006, 0.008), where
rowwise_normalize returns (0.6, 0.8). The floor is 1e-6 on each row's norm (README.md, 'Fix')."""
import torch

from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('rowwise_normalize_serves_every_batch',)


def fixed_rowwise_normalize(x):
    return x * torch.rsqrt((x * x).sum(dim=1, keepdim=True).clamp_min(1e-6))
