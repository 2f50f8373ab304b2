"""Every count and message kata 6's lesson states about Dynamo, measured on the installed torch (2.13.0).

A torch upgrade that changes one of them fails here, naming the sentence of katas/06_recompiles/README.md to
rewrite. The lesson's rules for `predict` are measured too, each time `make test` scores the reference: its checks
compare the reference's predictions with Dynamo on fixed and random call sequences (`make mutate` does so in the deep
profile).
"""
from __future__ import annotations


import pytest
import torch
import torch._dynamo
import torch._dynamo.utils
from torch._dynamo.testing import CompileCounter

from checker.core.manifest import KATAS_DIR
from checker.core.modules import load_module

KATA = KATAS_DIR / "06_recompiles"
suspects = load_module(KATA / "suspects.py", "kata06_suspects_for_facts")
checks = load_module(KATA / "hidden" / "checks.py", "kata06_checks_for_facts")


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def outcomes(calls, dynamic):
    return [(seen.kind, seen.symbolic) for seen in checks.measure(checks.calls_of(*calls), dynamic)]


def guard_failures() -> list[str]:
    return [str(reason) for reasons in torch._dynamo.utils.guard_failures.values() for reason in reasons]


def test_recompile_limit_is_8_then_new_calls_run_eagerly():
    assert torch._dynamo.config.recompile_limit == 8
    seen = outcomes([(b, 3) for b in range(1, 11)] + [(3, 3)], False)
    assert [kind for kind, _ in seen] == ["compile"] * 8 + ["eager", "eager", "reuse"]


def test_fullgraph_makes_the_recompile_limit_an_error():
    compiled = torch.compile(suspects.scaled_relu, backend=CompileCounter(), dynamic=False, fullgraph=True)
    with pytest.raises(torch._dynamo.exc.FailOnRecompileLimitHit):
        for batch in range(1, 11):
            compiled(torch.ones(batch, 3), 1)


def test_the_guard_failure_texts_of_the_table():
    compiled = torch.compile(suspects.scaled_relu, backend=CompileCounter())
    compiled(torch.ones(2, 4), 1)
    compiled(torch.ones(3, 4), 1)
    compiled(torch.ones(3, 4, dtype=torch.float16), 1)
    texts = guard_failures()
    assert any("tensor 'x' size mismatch at index 0. expected 2, actual 3" in t for t in texts), texts
    assert any("tensor 'x' dtype mismatch. expected Float, actual Half" in t for t in texts), texts
    torch._dynamo.reset()
    compiled = torch.compile(suspects.scaled_relu, backend=CompileCounter())
    compiled(torch.ones(2, 4), 1)
    compiled(torch.ones(2, 4), 2)
    assert any(t.split(":", 1)[1].split("#")[0].strip() == "n == 1" for t in guard_failures()), guard_failures()


@pytest.mark.parametrize("suspect, guard", [("DecayingHead", "self.calls =="), ("RunningMean", "len(self.seen) == 1")])
def test_module_state_suspects_recompile_every_call_until_the_limit(suspect, guard):
    counter = CompileCounter()
    compiled = torch.compile(getattr(suspects, suspect)(), backend=counter)
    with torch.no_grad():
        for _ in range(12):
            compiled(torch.ones(2, 4))
    assert counter.frame_count == 8
    assert any(guard in t for t in guard_failures()), guard_failures()


def test_a_float_attribute_of_a_module_is_guarded_until_it_changes_then_an_input():
    """The guard table's row for a float attribute: its value, until it changes once; then an input."""

    class Scale(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = 0.5

        def forward(self, x):
            return x * self.scale

    graphs = []

    def backend(gm, example_inputs):
        graphs.append([node.name for node in gm.graph.nodes if node.op == "placeholder"])
        return gm

    module = Scale()
    compiled = torch.compile(module, backend=backend)
    for step in range(6):
        module.scale = 0.5 + step / 10
        assert torch.equal(compiled(torch.ones(2)), torch.full((2,), module.scale))
    assert len(graphs) == 2
    assert graphs[0] == ["l_x_"] and "l_self_scale" in graphs[1], graphs
    assert any(t.split(":", 1)[1].split("#")[0].strip() == "self.scale == 0.5" for t in guard_failures()), \
        guard_failures()


def test_size_0_is_never_symbolic_and_a_symbolic_size_refuses_it():
    assert outcomes([(2, 4), (3, 4), (0, 4), (0, 4), (5, 4)], None) == [
        ("compile", ()), ("compile", ("x.0",)), ("compile", ()), ("reuse", ()), ("reuse", ())]
    assert outcomes([(0, 4), (0, 6), (3, 0)], True) == [
        ("compile", ("n", "x.1")), ("reuse", ()), ("compile", ("n", "x.0"))]


def test_the_memory_of_changed_inputs_is_per_frame_not_per_dtype():
    assert outcomes([(2, 4), (3, 4), ((3, 4), 1, "float16"), ((5, 4), 1, "float16")], None) == [
        ("compile", ()), ("compile", ("x.0",)), ("compile", ("x.0",)), ("reuse", ())]


def test_rowwise_loop_traces_a_graph_per_batch_size():
    counter = CompileCounter()
    compiled = torch.compile(suspects.rowwise_normalize, backend=counter)
    for batch in (1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 2, 12):
        compiled(torch.ones(batch, 4))
    assert counter.frame_count == 8


def test_the_worked_example_of_predict():
    assert outcomes([(2, 4), (3, 4), (7, 4), (1, 4)], None) == [
        ("compile", ()), ("compile", ("x.0",)), ("reuse", ()), ("compile", ())]


def test_duck_sizing_makes_3x3_then_3x4_two_graphs():
    assert [kind for kind, _ in outcomes([(3, 3), (3, 4)], True)] == ["compile", "compile"]


def test_mark_dynamic_compiles_once_for_many_batch_sizes():
    counter = CompileCounter()
    compiled = torch.compile(suspects.scaled_relu, backend=counter)
    first = torch.ones(2, 4)
    torch._dynamo.mark_dynamic(first, 0)
    for x in (first, torch.ones(3, 4), torch.ones(7, 4)):
        compiled(x, 1)
    assert counter.frame_count == 1


def test_mark_static_keeps_a_dimension_static_under_dynamic_true():
    counter = CompileCounter()
    compiled = torch.compile(suspects.scaled_relu, backend=counter, dynamic=True)
    first = torch.ones(2, 4)
    torch._dynamo.mark_static(first, 1)
    compiled(first, 1)
    compiled(torch.ones(2, 5), 1)
    assert counter.frame_count == 2


def test_stances():
    counter = CompileCounter()
    compiled = torch.compile(suspects.scaled_relu, backend=counter)
    compiled(torch.ones(2, 4), 1)
    with torch.compiler.set_stance("fail_on_recompile"):
        compiled(torch.ones(2, 4), 1)
        with pytest.raises(RuntimeError, match="Detected recompile when torch.compile stance is 'fail_on_recompile'"):
            compiled(torch.ones(3, 4), 1)
    with torch.compiler.set_stance("eager_on_recompile"):
        compiled(torch.ones(5, 4), 1)
    assert counter.frame_count == 1


def test_item_arithmetic_stays_in_the_graph_but_a_branch_on_it_fails():
    counter = CompileCounter()
    torch.compile(lambda x: x * x.sum().item(), backend=counter, fullgraph=True)(torch.ones(3))
    assert counter.frame_count == 1

    def branch(x):
        if x.sum().item() > 0:
            return x
        return -x

    with pytest.raises(Exception, match="data-dependent"):
        torch.compile(branch, backend=CompileCounter(), fullgraph=True)(torch.ones(3))


def test_the_npu_refuses_symbolic_inputs():
    from torch.fx.experimental.proxy_tensor import make_fx

    from katas.common.npu import NPU, NPUCompileError

    gm = make_fx(torch.relu, tracing_mode="symbolic")(torch.ones(3, 4))
    example = [node.meta["val"] for node in gm.graph.nodes if node.op == "placeholder"]
    with pytest.raises(NPUCompileError):
        NPU.compile(gm, example, name="symbolic")


def test_public_and_hidden_suspects_are_the_same_code():
    import inspect

    hidden = checks.suspects
    for name in ("scaled_relu", "DecayingHead", "RunningMean", "rowwise_normalize"):
        assert inspect.getsource(getattr(suspects, name)) == inspect.getsource(getattr(hidden, name)), name


def test_explain_lists_a_tensor_match_on_x_and_an_equals_match_on_n():
    out = torch._dynamo.explain(suspects.scaled_relu)(torch.ones(2, 4), 3)
    guards = {guard.name: guard for guard in out.out_guards}
    assert "TENSOR_MATCH" in str(guards["L['x']"])
    assert "L['n'] == 3" in str(guards["L['n']"])


def test_mark_unbacked_takes_size_1_into_the_same_graph():
    counter = CompileCounter()
    compiled = torch.compile(suspects.scaled_relu, backend=counter)
    for batch in (2, 1, 3, 1):
        x = torch.ones(batch, 4)
        torch._dynamo.decorators.mark_unbacked(x, 0)
        compiled(x, 1)
    assert counter.frame_count == 1


def test_aot_autograd_guards_a_float_attribute_again_and_drops_float64_in_place_updates():
    """README 'Fix' (blind round 6): through aot_autograd (backend="aot_eager", the step torch.compile's default
    backend runs before Inductor) a Python float on the instance is guarded on its value, so every call compiles again;
    a float64 0-dim buffer updated with add_ is not updated at all, while += on it and a float32 buffer's add_ are."""
    from torch._dynamo.testing import CompileCounterWithBackend

    class FloatCounter(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0.0

        def forward(self, x):
            self.calls += 1
            return x * 0.9 ** self.calls

    counts = {}
    for backend in ("eager", "aot_eager"):
        torch._dynamo.reset()
        counter = CompileCounterWithBackend(backend)
        compiled = torch.compile(FloatCounter(), backend=counter, fullgraph=True)
        try:
            for _ in range(12):
                compiled(torch.ones(2))
        except torch._dynamo.exc.FailOnRecompileLimitHit:
            pass
        counts[backend] = counter.frame_count
    assert counts == {"eager": 2, "aot_eager": 8}, counts

    class Buffer(torch.nn.Module):
        def __init__(self, dtype: torch.dtype, update: str) -> None:
            super().__init__()
            self.update = update
            self.register_buffer("c", torch.zeros((), dtype=dtype))

        def forward(self, x):
            if self.update == "add_":
                self.c.add_(1)
            else:
                self.c += 1
            return x * self.c.to(x.dtype)

    finals = {}
    for dtype, update in ((torch.float64, "add_"), (torch.float64, "+="), (torch.float32, "add_")):
        torch._dynamo.reset()
        module = Buffer(dtype, update)
        compiled = torch.compile(module, backend="aot_eager", fullgraph=True)
        for _ in range(3):
            compiled(torch.ones(2))
        finals[(str(dtype), update)] = float(module.c)
    assert finals == {("torch.float64", "add_"): 0.0, ("torch.float64", "+="): 3.0, ("torch.float32", "add_"): 3.0}, \
        finals
