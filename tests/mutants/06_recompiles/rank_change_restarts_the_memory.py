"""Mistake: a change of rank makes every dimension symbolic in the graph it causes, and then the frame starts
remembering the new rank's sizes afresh, as at a first compile. With dynamic=None, (2, 4), (2, 4, 5), (2, 1, 5):
Dynamo's third graph keeps x.0 and x.2 symbolic (every dimension is dynamic for good after a rank change; x.1 is
static at 1); this mistake compiles a static graph. README.md, 'Predict', rule 5. Blind round 2,
wrong_rank_change_not_for_good."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('changed_rank_makes_every_dimension_symbolic', 'random_reuses_and_recompiles_every_setting')

_right_remember = _ref._remember


def _remember(seen, call):
    before = dict(seen)
    changed = _right_remember(seen, call)
    if before and before[_ref.RANK] is not None and before[_ref.RANK] != len(call.shape):
        n = seen.get("n")
        seen.clear()
        seen.update({f"x.{i}": size for i, size in enumerate(call.shape)}, n=n)
        seen[_ref.RANK] = len(call.shape)
    return changed


_ref._remember = _remember
