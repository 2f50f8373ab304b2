"""Mistake: a call is checked against the newest graph only, as if each recompile replaced the
graph before it: going back to an earlier shape compiles again."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('random_calls_automatic', 'random_calls_dynamic', 'recompile_limit_then_eager', 'sizes_0_and_1_stay_static', 'static_graph_per_shape_dtype_and_int')

_ref._served = lambda graphs, call: bool(graphs) and graphs[-1].accepts(call)
