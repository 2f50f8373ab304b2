"""Mistake: the buckets are taken in the order given: with (6, 3), a batch of 2 goes to 6."""
import torch

from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('buckets_in_any_order',)


_right_init = _ref.BucketedNPU.__init__


def _keep_order(self, model, buckets=(1, 2, 4, 8)):
    _right_init(self, model, buckets)
    self.buckets = tuple(buckets)


_ref.BucketedNPU.__init__ = _keep_order
