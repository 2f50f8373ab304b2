"""Mistake: with dynamic=True, equal sizes get symbols of their own: (3, 3) then (3, 4) is one graph."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = (
    'duck_sizing_in_every_graph',
    'equal_sizes_share_a_symbol',
    'random_calls_dynamic',
    'random_reuses_and_recompiles_every_setting',
    'sizes_seen_changing_get_their_own_symbol',
)

_ref._duck_sized = lambda symbolic, changed: set()
