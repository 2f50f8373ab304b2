"""Mistake: once the recompile limit is hit, every call runs eagerly, even calls a cached graph
fits."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('random_calls_automatic', 'random_calls_dynamic', 'recompile_limit_then_eager')

_right_served = _ref._served
_ref._served = lambda graphs, call: len(graphs) < _ref.RECOMPILE_LIMIT and _right_served(graphs, call)
