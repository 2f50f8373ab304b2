"""Mistake: the cache grows without bound: past 8 graphs Dynamo keeps compiling."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('random_calls_automatic', 'random_calls_dynamic', 'random_calls_static', 'recompile_limit_then_eager')

_ref.RECOMPILE_LIMIT = 10**6
