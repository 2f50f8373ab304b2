"""Mistake: the frame's memory of each input's values is refreshed by every call, a reuse too, not only by the
calls that compile. With dynamic=True, (3, 3), (4, 4), (3, 3) in float16, (4, 5) in float16: (4, 4) reuses the
first graph, so Dynamo's memory still holds (3, 3) and the float16 graph duck-sizes x.0 == x.1 again; (4, 5) then
compiles. This mistake counts the reuse as a change, gives the float16 graph a symbol per dimension and predicts
a reuse. Dynamo remembers the values each input had when it was compiled (README.md, 'Predict', rule 5).
Blind round 2, wrong_memory_every_call."""
from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, predict, BucketedNPU = _ref.Call, _ref.Outcome, _ref.predict, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = ('duck_sizing_in_every_graph', 'random_reuses_and_recompiles_every_setting')


def predict(calls, dynamic=None):
    graphs, seen, outcomes = [], {}, []
    for call in calls:
        changed = _ref._remember(seen, call)  # every call, a reuse too
        if _ref._served(graphs, call):
            outcomes.append(Outcome("reuse"))
        elif len(graphs) >= _ref.RECOMPILE_LIMIT:
            outcomes.append(Outcome("eager"))
        else:
            symbolic = _ref._symbolic(dynamic, call, changed)
            graph, kept = _ref._compile(call, symbolic, _ref._duck_sized(symbolic, changed))
            graphs.append(graph)
            outcomes.append(Outcome("compile", kept))
    return outcomes
