"""Mistake: a symbolic size is taken to cover only sizes above 2, as if 0/1 specialisation reached 2 as well:
a graph made symbolic by sizes 3 and 4 is thought to refuse a batch of 2."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = (
    'changed_rank_makes_every_dimension_symbolic',
    'random_calls_automatic',
    'random_calls_dynamic',
    'sizes_0_and_1_stay_static',
    'sizes_seen_changing_get_their_own_symbol',
)

_right_accepts = _ref._Graph.accepts


def _accepts(self, call):
    if any(want is None and got == 2 for want, got in zip(self.sizes, call.shape)):
        return False
    return _right_accepts(self, call)


_ref._Graph.accepts = _accepts
