"""Mistake: predict() does not model Dynamo's cache; it compiles scaled_relu and reports what happened. The lesson
asks for the rules, and the checks call predict() with torch.compile forced to run eagerly, so nothing compiles."""
import torch
import torch._dynamo

from checker.kit import load_reference

_ref = load_reference("06_recompiles", "recompiles.py")
Call, Outcome, BucketedNPU = _ref.Call, _ref.Outcome, _ref.BucketedNPU
FixedDecayingHead, FixedRunningMean, fixed_rowwise_normalize = (
    _ref.FixedDecayingHead, _ref.FixedRunningMean, _ref.fixed_rowwise_normalize)

KILLED_BY = (
    'a_change_to_0_or_1_marks_the_dimension',
    'changed_int_becomes_symbolic',
    'changed_rank_makes_every_dimension_symbolic',
    'changed_size_becomes_symbolic',
    'dtype_change_compiles_again',
    'duck_sizing_in_every_graph',
    'equal_sizes_share_a_symbol',
    'n_never_shares_a_symbol',
    'random_calls_automatic',
    'random_calls_dynamic',
    'random_calls_static',
    'random_reuses_and_recompiles_every_setting',
    'recompile_limit_then_eager',
    'repeated_call_reuses_its_graph',
    'sizes_0_and_1_stay_static',
    'sizes_seen_changing_get_their_own_symbol',
    'static_graph_per_shape_dtype_and_int',
    'symbolic_from_the_first_call',
)


def predict(calls, dynamic=None):
    torch._dynamo.reset()
    graphs, ran = [], []

    def backend(gm, example_inputs):
        index = len(graphs)
        graphs.append(frozenset(
            [f"x.{i}" for node in gm.graph.nodes if node.name == "l_x_"
             for i, size in enumerate(node.meta["example_value"].shape) if isinstance(size, torch.SymInt)]
            + ["n" for node in gm.graph.nodes if node.name == "l_n_" and isinstance(node.meta["example_value"], torch.SymInt)]))
        return lambda *args: ran.append(index) or gm(*args)

    compiled = torch.compile(lambda x, n: torch.relu(x) * n, backend=backend, dynamic=dynamic)
    outcomes = []
    for call in calls:
        before, before_ran = len(graphs), len(ran)
        compiled(torch.ones(*call.shape, dtype=getattr(torch, call.dtype)), call.n)
        if len(graphs) > before:
            outcomes.append(Outcome("compile", graphs[-1]))
        else:
            outcomes.append(Outcome("reuse" if len(ran) > before_ran else "eager"))
    return outcomes
