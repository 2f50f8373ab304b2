"""Mistake: every symbolic dimension is duck-sized, also those Dynamo has seen change (and so also
under dynamic=None)."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = (
    'a_change_to_0_or_1_marks_the_dimension',
    'changed_rank_makes_every_dimension_symbolic',
    'duck_sizing_in_every_graph',
    'random_reuses_and_recompiles_every_setting',
    'sizes_seen_changing_get_their_own_symbol',
)

_ref._duck_sized = lambda symbolic, changed: set(symbolic)
