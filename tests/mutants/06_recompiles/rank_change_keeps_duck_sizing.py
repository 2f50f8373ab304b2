"""Mistake: under dynamic=True, a change of rank is not a change for duck sizing: only a dimension whose own size
changed, index by index, gets a symbol of its own, so (3, 3), (3, 3, 3) ties the three sizes of the rank-3 graph.
Dynamo gives each a symbol of its own, and (3, 4, 5) reuses that graph (README.md, 'Predict', rule 6: "A change of
rank changes every dimension (rule 5)")."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = (
    'random_reuses_and_recompiles_every_setting',
    'sizes_seen_changing_get_their_own_symbol',
)

_remember_right, _symbolic_right = _ref._remember, _ref._symbolic
_setting = {"dynamic": None}


class _Changed(set):
    """The inputs that changed, and among them those whose own value changed (index by index)."""

    own: frozenset = frozenset()


def _remember(seen, call):
    changed = _Changed(_remember_right(seen, call))
    changed.own = frozenset(name for name in changed if seen.get(name) is None)
    return changed


def _symbolic(dynamic, call, changed):
    _setting["dynamic"] = dynamic
    return _symbolic_right(dynamic, call, changed)


def _duck_sized(symbolic, changed):
    if _setting["dynamic"] is not True:  # the mistake is about dynamic=True's duck sizing only
        return symbolic - changed
    return symbolic - getattr(changed, "own", changed)


_ref._remember = _remember
_ref._symbolic = _symbolic
_ref._duck_sized = _duck_sized
