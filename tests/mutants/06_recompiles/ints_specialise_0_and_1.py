"""Mistake: n gets the 0/1 specialisation of sizes: a symbolic int never covers 0 or 1."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = (
    'a_change_to_0_or_1_marks_the_dimension',
    'changed_int_becomes_symbolic',
    'duck_sizing_in_every_graph',
    'equal_sizes_share_a_symbol',
    'random_calls_automatic',
    'random_calls_dynamic',
    'random_reuses_and_recompiles_every_setting',
    'sizes_0_and_1_stay_static',
    'sizes_seen_changing_get_their_own_symbol',
    'symbolic_from_the_first_call',
)

_ref._can_be_symbolic = lambda name, value: value >= _ref.MIN_SYMBOLIC_SIZE
