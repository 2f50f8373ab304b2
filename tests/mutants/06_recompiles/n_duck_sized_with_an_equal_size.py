"""Mistake: under dynamic=True the int n joins duck sizing: an n equal to a size of x shares that size's symbol,
so the graph also guards n == that size. (3, 4) with n=3, then (5, 4) with n=3: Dynamo reuses the first graph (n
has a symbol of its own, and a symbolic n accepts any value); this mistake compiles again. Duck sizing is about
sizes (README.md, 'Predict', rule 6). Blind round 2, wrong_duck_includes_n."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('n_never_shares_a_symbol', 'random_reuses_and_recompiles_every_setting')

_right_compile = _ref._compile


class _NDucked:
    def __init__(self, graph, index):
        self.graph, self.index = graph, index

    def accepts(self, call):
        return self.graph.accepts(call) and call.n == call.shape[self.index]


def _compile(call, symbolic, duck):
    graph, kept = _right_compile(call, symbolic, duck)
    if "n" in kept and "n" in duck:
        for i, size in enumerate(call.shape):
            if f"x.{i}" in kept and f"x.{i}" in duck and size == call.n:
                return _NDucked(graph, i), kept
    return graph, kept


_ref._compile = _compile
