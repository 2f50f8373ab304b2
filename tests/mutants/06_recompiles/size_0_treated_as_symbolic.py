"""Mistake: 0/1 specialisation is taken to mean size 1 only: a size of 0 becomes symbolic like 2 or 3, and a
symbolic dimension accepts 0. With dynamic=None, (2, 4), (3, 4), (0, 4) would reuse the x.0-symbolic graph for
(0, 4); Dynamo compiles a third graph, static at 0, because a symbolic size is at least 2 and sizes 0 and 1 are
never symbolic (README.md, 'Predict', rules 2 and 3). With dynamic=True, (0, 4) compiles a graph symbolic in x.1
and n only."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = (
    'a_change_to_0_or_1_marks_the_dimension',
    'random_calls_automatic',
    'random_calls_dynamic',
    'random_reuses_and_recompiles_every_setting',
    'sizes_0_and_1_stay_static',
)


def _accepts(self, call):
    if call.dtype != self.dtype or len(call.shape) != len(self.sizes):
        return False
    for want, got in zip(self.sizes, call.shape):
        if (want is None and got == 1) or (want is not None and want != got):
            return False
    if any(len({call.shape[i] for i in group}) > 1 for group in self.equal):
        return False
    return self.n is None or self.n == call.n


_ref._Graph.accepts = _accepts
_ref._can_be_symbolic = lambda name, value: not name.startswith("x.") or value != 1
