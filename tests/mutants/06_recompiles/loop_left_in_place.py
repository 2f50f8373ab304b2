"""Mistake: fixed_rowwise_normalize keeps the Python loop over the batch and hopes dynamic shapes cover
it: range(x.shape[0]) needs a concrete count, so each batch size is still a graph of its own."""
import torch

from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('rowwise_normalize_serves_every_batch',)


def fixed_rowwise_normalize(x):
    return torch.stack([x[i] / x[i].norm().clamp_min(1e-6) for i in range(x.shape[0])])
