"""Mistake: a change of rank is read dimension by dimension, position by position: (2, 4) then (2, 4, 5) changed
no size of dimensions 0 and 1, so only dimension 2 would be new. Dynamo marks every dimension of x dynamic once
the rank changes (README.md, 'Predict', rule 5)."""
import torch

from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = (
    'changed_rank_makes_every_dimension_symbolic',
    'random_calls_automatic',
    'random_reuses_and_recompiles_every_setting',
    'sizes_seen_changing_get_their_own_symbol',
)


def _remember(seen, call):
    for name, value in _ref._inputs(call).items():
        if name in seen and seen[name] != value:
            seen[name] = None
        seen.setdefault(name, value)
    return {name for name in _ref._inputs(call) if seen[name] is None}


_ref._remember = _remember
