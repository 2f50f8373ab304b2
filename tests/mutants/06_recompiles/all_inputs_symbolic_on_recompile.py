"""Mistake: with dynamic=None, a recompile makes every input symbolic, not only the ones
whose value changed."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = (
    'a_change_to_0_or_1_marks_the_dimension',
    'changed_int_becomes_symbolic',
    'changed_rank_makes_every_dimension_symbolic',
    'changed_size_becomes_symbolic',
    'dtype_change_compiles_again',
    'random_calls_automatic',
    'random_reuses_and_recompiles_every_setting',
    'sizes_0_and_1_stay_static',
    'sizes_seen_changing_get_their_own_symbol',
)

_ref._symbolic = (lambda dynamic, call, changed: set(_ref._inputs(call)) if dynamic is True or (dynamic is None and changed)
                 else set())
