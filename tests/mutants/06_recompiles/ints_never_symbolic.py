"""Mistake: Python ints are constants forever: every new value of n is a new graph."""
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
    'n_never_shares_a_symbol',
    'random_calls_automatic',
    'random_calls_dynamic',
    'random_reuses_and_recompiles_every_setting',
    'sizes_0_and_1_stay_static',
    'sizes_seen_changing_get_their_own_symbol',
    'symbolic_from_the_first_call',
)

_right_symbolic = _ref._symbolic
_ref._symbolic = lambda dynamic, call, changed: _right_symbolic(dynamic, call, changed) - {"n"}
