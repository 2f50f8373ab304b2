"""Mistake: the frame's memory of each input's values is kept per dtype, as if a float16 call started afresh.
With dynamic=None, (2, 4), (3, 4), then (3, 4) in float16: Dynamo compiles the float16 graph with x.0 symbolic,
because x.0 changed before (under float32) and stays dynamic for good; a per-dtype memory predicts a static
graph, then a fourth compile for (5, 4) in float16, which Dynamo serves with that symbolic graph. Dynamo
remembers per frame (README.md, 'Predict', rule 5)."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = (
    'a_change_to_0_or_1_marks_the_dimension',
    'changed_rank_makes_every_dimension_symbolic',
    'dtype_change_compiles_again',
    'duck_sizing_in_every_graph',
    'random_calls_automatic',
    'random_reuses_and_recompiles_every_setting',
    'sizes_seen_changing_get_their_own_symbol',
)

_right_remember = _ref._remember


def _remember(seen, call):
    return _right_remember(seen.setdefault(("memory of", call.dtype), {}), call)


_ref._remember = _remember
