"""Mistake: a change to size 0 or 1 is not remembered, since the graph compiled for it is static at that size anyway
(0/1 specialisation): only a change to a size of 2 or more marks a dimension. Dynamo marks it all the same, so
(2, 4), (1, 4), (2, 4) with n=2 compiles a third graph with x.0 and n symbolic (README.md, 'Predict', rule 5: "A
change to 0 or 1 is a change too")."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = (
    'a_change_to_0_or_1_marks_the_dimension',
    'random_calls_automatic',
)


def _remember(seen, call):
    values = {**_ref._inputs(call), _ref.RANK: len(call.shape)}
    for name, value in values.items():
        to_0_or_1 = name.startswith("x.") and value < _ref.MIN_SYMBOLIC_SIZE
        if name in seen and seen[name] != value and not to_0_or_1:
            seen[name] = None
        seen.setdefault(name, value)
    every_dimension = seen[_ref.RANK] is None
    return {name for name in _ref._inputs(call)
            if seen.get(name) is None or (every_dimension and name.startswith("x."))}


_ref._remember = _remember
