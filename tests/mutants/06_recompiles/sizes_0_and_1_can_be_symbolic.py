"""Mistake: no 0/1 specialisation: a size of 1 becomes symbolic like any other, and a symbolic
dimension accepts 1."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = (
    'a_change_to_0_or_1_marks_the_dimension',
    'changed_rank_makes_every_dimension_symbolic',
    'random_calls_automatic',
    'random_calls_dynamic',
    'random_reuses_and_recompiles_every_setting',
    'sizes_0_and_1_stay_static',
    'symbolic_from_the_first_call',
)

_ref.MIN_SYMBOLIC_SIZE = 0
