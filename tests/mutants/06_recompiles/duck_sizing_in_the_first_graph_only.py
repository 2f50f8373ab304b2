"""Mistake: duck sizing only in the frame's first graph; every later graph gives each dimension a symbol of its
own, changed or not. With dynamic=True, (3, 3), (3, 3) in float16, (4, 5) in float16: the float16 graph still
duck-sizes x.0 == x.1 (neither has changed), so (4, 5) compiles; this mistake predicts a reuse. Duck sizing holds
for every dimension whose size has not changed before (README.md, 'Predict', rule 6). Blind round 2,
wrong_duck_first_graph_only."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('duck_sizing_in_every_graph', 'random_reuses_and_recompiles_every_setting')

_right_remember = _ref._remember
_first = {"graph": True}


def _remember(seen, call):
    _first["graph"] = not seen
    return _right_remember(seen, call)


def _duck_sized(symbolic, changed):
    return symbolic - changed if _first["graph"] else set()


_ref._remember = _remember
_ref._duck_sized = _duck_sized
