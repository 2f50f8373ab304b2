"""Hidden checks for kata 5 (a torch.compile backend for the simulated NPU). Learners: solve the kata from
README.md, not from here.

Every check compiles a real model with `torch.compile(model, backend=<the attempt's npu_backend>)` and
compares the answer with eager. What ran where is read from two witnesses the attempt does not control:

- the NPU itself (`katas.common.npu.DEVICE.stats`): programs compiled and run, launches, ops run, compile
  and runtime errors;
- a TorchDispatchMode around a second call of each compiled graph, recording every ATen op the host ran
  outside an NPU program (`DEVICE.busy` tells them apart). It wraps a direct call of the callable the
  backend returned, not a call of the torch.compile'd model: with a dispatch mode active, Dynamo stops
  using its compiled code for that frame, even for later calls.

"Supported" means the NPU's own verdict: a compute op whose canonical name is in NPU_OPS. Layout ops
(t, permute, transpose, view, reshape) cost no launch and may run on either side. Partition and launch
counts are compared with the reference on models whose partitioning has one right answer (chains of
Linear layers with CPU ops between them), so any correct lowering passes.
"""
from __future__ import annotations

import copy
import sys
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
import torch._dynamo
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from checker.child import load_module
from checker.kit import CheckFailed, Checks, Context, expect, fuzz
from checker.manifest import KATAS_DIR
from katas.common import describe, example_input
from katas.common.models import CPU_ONLY_ACTIVATIONS, NPU_FRIENDLY_ACTIVATIONS, build_mlp
from katas.common.npu import (DEVICE, LAYOUT_OPS, NPU_OPS, NPUFallbackWarning, NPURuntimeError, NPUStats,
                              canonical_name)
from katas.common.strategies import mlp_specs
from katas.common.zoo import ZOO

CHECKS = Checks()

COMPUTE_NPU_OPS = NPU_OPS - LAYOUT_OPS
BACKEND_NAME = "kata_npu"


# --- models ----------------------------------------------------------------------------------------------

class LoneRelu(nn.Module):
    """sin -> relu -> cumsum: one supported op between two ops the NPU cannot run."""

    def forward(self, x):
        return torch.cumsum(torch.relu(torch.sin(x)), dim=-1)


class Sandwich(nn.Module):
    """Linear -> GELU -> sin -> Linear -> ReLU -> softmax -> Linear: three NPU islands between CPU ops."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(6, 8), nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x):
        h = torch.sin(F.gelu(self.fc1(x)))
        h = torch.softmax(torch.relu(self.fc2(h)), dim=-1)
        return self.fc3(h)


class GraphBreakMLP(nn.Module):
    """Linear -> GELU, then torch._dynamo.graph_break(), then Linear -> ReLU: Dynamo hands the backend two graphs."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        torch._dynamo.graph_break()
        return torch.relu(self.fc2(h))


@dataclass(frozen=True)
class Example:
    """A model to compile: how to build it, its input, and one line saying what it is."""

    name: str
    build: Callable[[], nn.Module]
    inputs: Callable[[], tuple[torch.Tensor, ...]]
    text: str

    def what(self) -> str:
        shapes = ", ".join(f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}" for t in self.inputs())
        return f"`{self.name}` ({self.text}) on input {shapes}"


def _seeded(factory: Callable[[], nn.Module], dtype: torch.dtype = torch.float32) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            return factory().to(dtype).eval()
    return build


def _randn(*shape: int, dtype: torch.dtype = torch.float32) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (torch.randn(*shape, generator=torch.Generator().manual_seed(1)).to(dtype),)


def first_sentence(doc: str | None, default: str) -> str:
    text = " ".join((doc or default).split())
    return text.split(". ")[0].rstrip(".")


def zoo(name: str) -> Example:
    model = ZOO[name]
    return Example(name, model.build, model.inputs, first_sentence(model.factory.__doc__, name))


def local(name: str, factory: Callable[[], nn.Module], *shape: int, dtype: torch.dtype = torch.float32) -> Example:
    return Example(name, _seeded(factory, dtype), _randn(*shape, dtype=dtype), first_sentence(factory.__doc__, name))


def mlp_example(spec) -> Example:
    return Example("random MLP", lambda: build_mlp(spec), lambda: (example_input(spec),), describe(spec))


LONE_RELU = local("lone_relu", LoneRelu, 3, 5)
SANDWICH = local("sandwich", Sandwich, 2, 6)
GRAPH_BREAK = local("graph_break_mlp", GraphBreakMLP, 2, 4)


# --- running a backend and watching it ---------------------------------------------------------------------

@dataclass
class Graph:
    """One graph Dynamo handed the backend: its example inputs and the callable the backend returned."""

    example_inputs: list
    compiled: Callable


@dataclass
class Run:
    """torch.compile(model, backend=...) called once, and what the NPU and the warnings said about it."""

    example: Example
    output: Any
    expected: Any
    graphs: list[Graph]
    stats: NPUStats
    model: nn.Module | None = None
    compiled_model: Callable | None = None
    fallbacks: list[str] = field(default_factory=list)  # NPUFallbackWarning messages
    other_warnings: list[str] = field(default_factory=list)

    @property
    def npu_line(self) -> str:
        return f"NPU: {self.stats.summary()}"


class HostOps(TorchDispatchMode):
    """Counts every ATen op the host runs outside NPU programs."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not DEVICE.busy:
            self.ops[func] += 1
        return func(*args, **(kwargs or {}))


def _recording(backend: Callable, graphs: list[Graph]) -> Callable:
    def record(gm, example_inputs):
        compiled = backend(gm, example_inputs)
        graphs.append(Graph(list(example_inputs), compiled))
        return compiled
    return record


def _unwrap(exc: BaseException) -> BaseException:
    """The backend's own exception when Dynamo wrapped it (so the learner sees their file and line)."""
    inner = getattr(exc, "inner_exception", None)
    return inner if isinstance(exc, torch._dynamo.exc.BackendCompilerFailed) and inner is not None else exc


def _unfinished_kata(exc: BaseException) -> str | None:
    """Which earlier kata's file raised NotImplementedError, if the attempt called an unfinished kata 3/4 stub."""
    if not isinstance(exc, NotImplementedError):
        return None
    frames = traceback.extract_tb(exc.__traceback__)
    for slug in ("03_fusion_guard", "04_op_support"):
        folder = (KATAS_DIR / slug).resolve()
        if frames and Path(frames[-1].filename).resolve().parent == folder:
            return f"{Path(frames[-1].filename).relative_to(KATAS_DIR.parent)} ({frames[-1].name})"
    return None


def call_backend(fn: Callable, *args: Any) -> Any:
    """Call something that runs the attempt's backend; unwrap Dynamo's wrapper, explain unfinished katas 3/4."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - re-raised, unwrapped
        inner = _unwrap(exc)
        where = _unfinished_kata(inner)
        if where:
            raise CheckFailed(f"your backend called {where}, which still raises NotImplementedError. "
                              f"Kata 5 builds on your katas 3 and 4: finish them first (`make kata N=3`, "
                              f"`make kata N=4`), or see README.md, 'Building blocks'.") from None
        if inner is exc:
            raise
        raise inner.with_traceback(inner.__traceback__) from None


def compile_and_run(backend: Callable, example: Example, *, inputs: tuple | None = None, model: nn.Module | None = None,
                    grad: bool = False) -> Run:
    """Compile `example`'s model with `backend` (fresh Dynamo cache, fresh DEVICE stats) and call it once."""
    torch._dynamo.reset()
    DEVICE.reset()
    model = model or example.build()
    inputs = inputs or example.inputs()
    graphs: list[Graph] = []
    compiled = torch.compile(model, backend=_recording(backend, graphs))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.set_grad_enabled(grad):
            output = call_backend(compiled, *inputs)
    with torch.no_grad():
        expected = model(*inputs)
    run = Run(example, output, expected, graphs, copy.deepcopy(DEVICE.stats), model, compiled)
    _sort_warnings(run, caught)
    return run


def _sort_warnings(run: "Run | Call", caught: list) -> None:
    for w in caught:
        if issubclass(w.category, NPUFallbackWarning):
            run.fallbacks.append(str(w.message))
        elif any(word in str(w.message).lower() for word in ("cpu", "npu", "fall")):
            run.other_warnings.append(f"{w.category.__name__}: {w.message}")


@dataclass
class Call:
    """One more call of something already compiled: its output, fallback warnings, and this call's NPU stats."""

    output: Any
    stats: NPUStats
    fallbacks: list[str] = field(default_factory=list)
    other_warnings: list[str] = field(default_factory=list)


def call_again(compiled: Callable, inputs: tuple | list, what: str, *, faults: int = 0) -> Call:
    """Call `compiled(*inputs)` with fresh DEVICE stats and `faults` injected faults.

    An NPURuntimeError escaping the call fails the check: a backend must never let one reach the user.
    """
    DEVICE.reset()
    DEVICE.inject_fault(faults)
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        try:
            output = call_backend(compiled, *inputs)
        except NPURuntimeError as error:
            raise CheckFailed(f"{what} raised NPURuntimeError: {error}\nA failed NPU run must not reach the user: "
                              f"catch NPURuntimeError around each program call and rerun that partition on the CPU "
                              f"for this call (with an NPUFallbackWarning).") from None
    call = Call(output, copy.deepcopy(DEVICE.stats))
    _sort_warnings(call, caught)
    return call


def expect_close(output: Any, expected: Any, what: str) -> None:
    try:
        torch.testing.assert_close(output, expected)
    except AssertionError as error:
        raise CheckFailed(f"{what} does not match eager:\n{error}") from None


def host_ops(run: Run) -> Counter:
    """Every ATen op the host runs when each compiled graph of `run` is called again with its example inputs."""
    recorder = HostOps()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for graph in run.graphs:
            with recorder:
                call_backend(graph.compiled, *graph.example_inputs)
    return recorder.ops


def ops_text(ops: Counter) -> str:
    return ", ".join(f"{op} x{n}" for op, n in sorted(ops.items(), key=lambda kv: str(kv[0]))) or "none"


# --- expectations --------------------------------------------------------------------------------------------

def expect_eager(run: Run, how: str = "") -> None:
    try:
        torch.testing.assert_close(run.output, run.expected)
    except AssertionError as error:
        raise CheckFailed(f"torch.compile({run.example.what()}, backend=your npu_backend){how} does not match eager:\n"
                          f"{error}\n{run.npu_line}\nEvery fallback and every NPU program must compute exactly "
                          f"what eager computes.") from None


def expect_supported_ops_on_npu(run: Run) -> None:
    """No compute op the NPU supports ran on the host."""
    ops = host_ops(run)
    on_cpu = Counter({op: n for op, n in ops.items() if canonical_name(op) in COMPUTE_NPU_OPS})
    expect(not on_cpu,
           f"torch.compile({run.example.what()}, backend=your npu_backend) ran ops the NPU supports on the CPU: "
           f"{ops_text(on_cpu)}.\n{run.npu_line}\nThe NPU runs every op in NPU_OPS, so these belong in NPU "
           f"partitions. If the NPU ran nothing at all, your op table probably does not match the graph it "
           f"classifies (aten names against a Dynamo graph of torch functions?) and everything went to the CPU "
           f"without a sound: CPU fallback is a safety net, not the default.")


def expect_no_fallback(run: Run) -> None:
    expect(not run.stats.compile_errors,
           f"torch.compile({run.example.what()}, backend=your npu_backend) sent a graph to NPU.compile that it "
           f"rejected: {run.stats.compile_errors[0] if run.stats.compile_errors else ''}\nThis model is float32 "
           f"with static shapes, so the only reason to reject is an op the NPU cannot run. One unsupported node in "
           f"a partition sends the whole partition back to the CPU: classify the ATen graph you compile and keep "
           f"such nodes out of NPU partitions. (Classifying the Dynamo graph and lowering afterwards does not "
           f"work: `a @ b` is \"matmul\" there but expand + bmm + _unsafe_view in ATen.)")
    expect(not run.fallbacks,
           f"torch.compile({run.example.what()}, backend=your npu_backend) warned that work fell back to the "
           f"CPU: {run.fallbacks[:1]}\nNothing here should fall back: float32, static shapes, no faults.\n"
           f"{run.npu_line}")


_REFERENCE_STATS: dict[tuple[str, str], NPUStats] = {}


def reference_stats(ctx: Context, example: Example) -> NPUStats:
    """What one call of `example` compiled with the reference backend does on the NPU (cached per example)."""
    key = (example.name, example.text)
    if key not in _REFERENCE_STATS:
        _REFERENCE_STATS[key] = compile_and_run(ctx.reference.npu_backend, example).stats
    return _REFERENCE_STATS[key]


def expect_counts_like_reference(ctx: Context, run: Run) -> None:
    got, want = run.stats, reference_stats(ctx, run.example)
    expect((got.runs, got.launches) == (want.runs, want.launches),
           f"torch.compile({run.example.what()}, backend=your npu_backend) ran {got.runs} NPU program(s) with "
           f"{got.launches} launch(es) in one call; the reference runs {want.runs} program(s) with "
           f"{want.launches} launch(es).\nyours:     {got.summary()}\nreference: {want.summary()}\n"
           f"One program per maximal group of connected NPU nodes (a partition), one launch per compute node, "
           f"and a fused Linear+GELU is a single launch. More programs: partitions were split (or supported "
           f"nodes left out); fewer: supported nodes never reached the NPU; more launches: a missed fusion.")


def expect_fallback_warning(seen: "Run | Call", what: str, reason_words: tuple[str, ...]) -> None:
    """`seen` warned with NPUFallbackWarning, in words that give the reason."""
    warned, npu_line = seen.fallbacks, f"NPU: {seen.stats.summary()}"
    other = (f"\nYou did warn, but not with NPUFallbackWarning: {seen.other_warnings[:2]}. The category is the "
             f"contract: it is what users filter on, and what tools count." if seen.other_warnings else "")
    expect(warned, f"{what} gave eager's answer but no NPUFallbackWarning. Falling back to the CPU is fine; doing it "
                   f"silently is not: the user believes the NPU ran their model. Warn with "
                   f"warnings.warn(..., NPUFallbackWarning) naming the partition or node and the reason.{other}\n"
                   f"{npu_line}")
    text = " ".join(warned).lower()
    expect(any(word in text for word in reason_words),
           f"{what} warned {warned[:2]}, which does not say why (expected a mention of "
           f"{' or '.join(repr(w) for w in reason_words)}). Put the NPU's error message in the warning: it names "
           f"the node and the reason.")


def run_attempt(ctx: Context, example: Example, **kwargs: Any) -> Run:
    return compile_and_run(ctx.attempt.npu_backend, example, **kwargs)


# --- stage: register -----------------------------------------------------------------------------------------

@CHECKS.check(stage="register", weight=2)
def registered_as_kata_npu(ctx):
    "importing backend.py registers npu_backend as \"kata_npu\", and importing it twice works"
    run = run_attempt(ctx, zoo("mlp"))  # first: does the backend work at all?
    expect_eager(run)
    from torch._dynamo.backends import registry

    path = Path(ctx.attempt.__file__)
    registry._COMPILER_FNS.pop(BACKEND_NAME, None)  # as if this process had never seen the name
    registry._BACKENDS.pop(BACKEND_NAME, None)
    for i in range(2):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = load_module(path, f"kata5_reimport_{i}")
        except AssertionError as error:
            raise CheckFailed(f"importing {path.name} a second time raised AssertionError: {error}\n"
                              f"torch._dynamo.register_backend refuses a name that is already taken. The checker "
                              f"(and importlib.reload, and notebooks) import a module more than once: replace the "
                              f"earlier entry, or skip registering when the name is already yours.") from None
    expect(BACKEND_NAME in torch._dynamo.list_backends(exclude_tags=()),
           f"after importing {path.name}, torch._dynamo.list_backends() has no {BACKEND_NAME!r}: register "
           f"npu_backend when the module is imported (torch._dynamo.register_backend(npu_backend, name=...)).")
    run = compile_and_run(torch._dynamo.lookup_backend(BACKEND_NAME), zoo("mlp"))
    expect_eager(run, " (backend given by name)")
    expect(run.stats.runs > 0,
           f"torch.compile(model, backend={BACKEND_NAME!r}) ran nothing on the NPU, although your npu_backend does "
           f"when passed directly: the name is registered to some other function.\n{run.npu_line}")
    del sys.modules["kata5_reimport_0"], sys.modules["kata5_reimport_1"], module


# --- stage: offload ------------------------------------------------------------------------------------------

FULLY_SUPPORTED = ("mlp", "mlp_3d", "residual", "functional", "pointwise", "fused_linear_gelu")


@CHECKS.check(stage="offload", weight=4)
def supported_models_run_entirely_on_npu(ctx):
    "models made only of NPU ops run entirely on the NPU, as one program"
    for name in FULLY_SUPPORTED:
        run = run_attempt(ctx, zoo(name))
        expect_eager(run)
        expect_no_fallback(run)
        expect_supported_ops_on_npu(run)
        expect(run.stats.runs == 1,
               f"torch.compile({run.example.what()}, backend=your npu_backend) ran {run.stats.runs} NPU programs in "
               f"one call; every op of this model is supported and they are all connected, so they form one "
               f"partition: one program.\n{run.npu_line}")


MIXED = ("norm_block", "attention", "renamed")


@CHECKS.check(stage="offload", weight=3)
def unsupported_ops_stay_on_cpu(ctx):
    "ops the NPU cannot run go to the CPU, without costing their neighbours the NPU"
    for example in (*map(zoo, MIXED), SANDWICH):
        run = run_attempt(ctx, example)
        expect_eager(run)
        expect_no_fallback(run)
        expect_supported_ops_on_npu(run)
        expect(run.stats.runs >= 1, f"torch.compile({example.what()}, backend=your npu_backend) ran nothing on "
                                    f"the NPU.\n{run.npu_line}")


@CHECKS.check(stage="offload", weight=2)
def lone_supported_op_runs_on_npu(ctx):
    "a single supported op between two CPU ops still runs on the NPU"
    run = run_attempt(ctx, LONE_RELU)
    expect_eager(run)
    expect_no_fallback(run)
    expect(run.stats.ops_run.get("relu", 0) == 1,
           f"torch.compile({LONE_RELU.what()}, backend=your npu_backend): relu did not run on the NPU.\n"
           f"{run.npu_line}\nA partition of one node is still a partition. CapabilityBasedPartitioner drops "
           f"single-node partitions unless you pass allows_single_node_partition=True (and then placeholders "
           f"must not count as supported, or they get pulled in).")


# --- stage: partition -----------------------------------------------------------------------------------------

@CHECKS.check(stage="partition", weight=3)
def partitions_and_launches_match_reference(ctx):
    "NPU programs and launches per call equal the reference's on models with CPU ops between NPU ops"
    for example in (SANDWICH, zoo("norm_block"), zoo("renamed"), LONE_RELU):
        run = run_attempt(ctx, example)
        expect_eager(run)
        expect_counts_like_reference(ctx, run)


@CHECKS.check(stage="partition", weight=2)
def graph_break_gives_two_npu_graphs(ctx):
    "a model with a graph break: both graphs run on the NPU"
    run = run_attempt(ctx, GRAPH_BREAK)
    expect(len(run.graphs) == 2, f"internal: Dynamo handed the backend {len(run.graphs)} graph(s), expected 2")
    expect_eager(run)
    expect_no_fallback(run)
    expect_supported_ops_on_npu(run)
    expect(run.stats.runs == 2,
           f"torch.compile({GRAPH_BREAK.what()}, backend=your npu_backend): Dynamo called your backend twice, once "
           f"per graph, and one call of the model ran {run.stats.runs} NPU program(s), expected 2 (one per graph). "
           f"Every graph is compiled on its own; state kept between backend calls must not mix them up.\n"
           f"{run.npu_line}")


# --- stage: fusion --------------------------------------------------------------------------------------------

@CHECKS.check(stage="fusion", weight=3)
def linear_gelu_is_one_launch(ctx):
    "Linear -> GELU runs as one fused launch on the NPU"
    for name in ("mlp", "mlp_3d", "residual"):
        run = run_attempt(ctx, zoo(name))
        expect_eager(run)
        fused, gelus = run.stats.ops_run.get("linear_gelu", 0), run.stats.ops_run.get("gelu", 0)
        expect(fused == 1 and gelus == 0,
               f"torch.compile({run.example.what()}, backend=your npu_backend) ran linear_gelu x{fused} and "
               f"gelu x{gelus} on the NPU; its Linear -> GELU pair should run as one kata.linear_gelu launch.\n"
               f"{run.npu_line}\nRun your kata 3 pass (fuse_linear_gelu) on each NPU partition before NPU.compile: "
               f"two launches become one, and the intermediate never leaves the NPU's memory.")
        expect_counts_like_reference(ctx, run)


class ReturnsPreActivation(nn.Module):
    """Linear -> GELU where the Linear's output is also returned: not safe to fuse."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 6)

    def forward(self, x):
        z = self.fc(x)
        return F.gelu(z), z


@CHECKS.check(stage="fusion", weight=1)
def unsafe_pair_is_not_fused(ctx):
    "a Linear whose output is also returned is not fused, and still runs on the NPU"
    example = local("returns_pre_activation", ReturnsPreActivation, 3, 4)
    run = run_attempt(ctx, example)
    expect_eager(run)
    expect(run.stats.ops_run.get("linear_gelu", 0) == 0,
           f"torch.compile({example.what()}, backend=your npu_backend) fused Linear -> GELU although the Linear's "
           f"output is also returned: kata 3's single-user guard must hold inside NPU partitions too.\n{run.npu_line}")
    expect_supported_ops_on_npu(run)


# --- stage: fallback ------------------------------------------------------------------------------------------

@CHECKS.check(stage="fallback", weight=2)
def float64_falls_back_loudly(ctx):
    "a float64 model gives eager's answer on the CPU, with an NPUFallbackWarning saying why"
    example = local("mlp_float64", lambda: ZOO["mlp"].factory(), 2, 4, dtype=torch.float64)
    example = Example(example.name, example.build, example.inputs, "the `mlp` zoo model in float64")
    run = run_attempt(ctx, example)
    expect_eager(run)
    expect(run.stats.runs == 0, f"internal: the NPU ran a float64 program\n{run.npu_line}")
    expect_fallback_warning(run, f"torch.compile({example.what()}, backend=your npu_backend)", ("float64", "dtype"))


@CHECKS.check(stage="fallback", weight=3)
def injected_fault_reruns_that_call_on_cpu(ctx):
    "a device fault: that call reruns on the CPU with a warning, the next call uses the NPU again"
    for example in (zoo("mlp"), zoo("renamed")):
        run = run_attempt(ctx, example)
        expect_eager(run)
        per_call = run.stats.runs
        inputs = example.inputs()
        what = f"calling the compiled {example.what()} after DEVICE.inject_fault(1)"
        faulted = call_again(run.compiled_model, inputs, what, faults=1)
        expect_close(faulted.output, run.expected, what)
        expect(len(faulted.stats.runtime_errors) == 1, f"internal: expected one runtime error, got {faulted.stats.summary()}")
        expect_fallback_warning(faulted, what, ("fault",))
        if per_call > 1:
            expect(faulted.stats.runs == per_call - 1,
                   f"{what}: the fault hit one of the {per_call} NPU programs, and {faulted.stats.runs} of the others "
                   f"ran on the NPU in that call (expected {per_call - 1}). Fall back per partition: only the "
                   f"program that failed reruns on the CPU.\nNPU: {faulted.stats.summary()}")
        after = call_again(run.compiled_model, inputs, f"the call after {what}")
        expect_close(after.output, run.expected, f"the call after {what}")
        expect(after.stats.runs == per_call and not after.fallbacks,
               f"the call after the faulted one ran {after.stats.runs} NPU program(s) (expected {per_call}, as before "
               f"the fault) and warned {after.fallbacks}.\nNPU: {after.stats.summary()}\nA fault affects one call: "
               f"later calls must use the NPU again, not stay on the CPU for good.")


@CHECKS.check(stage="fallback", weight=2)
def new_batch_size_still_correct(ctx):
    "a new batch size gives eager's answer, with a warning where the NPU could not run it"
    example = zoo("mlp")
    run = run_attempt(ctx, example)
    expect_eager(run)
    (x,) = example.inputs()
    x5 = torch.randn(5, x.shape[1], generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        expected = run.model(x5)

    # 1. the callable your backend returned, called directly with a batch of 5: the NPU program was compiled for 2
    graph = run.graphs[0]
    where = next(i for i, t in enumerate(graph.example_inputs) if isinstance(t, torch.Tensor) and torch.equal(t, x))
    inputs = [x5 if i == where else t for i, t in enumerate(graph.example_inputs)]
    what = (f"the callable your npu_backend returned for {example.what()}, called with a (5, 4) input instead of "
            f"(2, 4)")
    call = call_again(graph.compiled, inputs, what)
    output = call.output[0] if isinstance(call.output, (list, tuple)) else call.output
    expect_close(output, expected, what)
    expect_fallback_warning(call, what, ("shape",))

    # 2. through torch.compile: Dynamo recompiles with a symbolic batch size, which the NPU cannot compile
    what = (f"torch.compile({example.what()}, backend=your npu_backend), called again with a (5, 4) input (Dynamo "
            f"recompiles the model with a symbolic batch size)")
    call = call_again(run.compiled_model, (x5,), what)
    expect_close(call.output, expected, what)
    expect_fallback_warning(call, what, ("shape", "symbolic", "dynamic", "symint"))


# --- stage: autograd ------------------------------------------------------------------------------------------

@CHECKS.check(stage="autograd", weight=2)
def gradients_match_eager(ctx):
    "under autograd, outputs and gradients match eager"
    for example in (zoo("residual"), SANDWICH):
        model, eager_model = example.build(), example.build()
        (x,) = example.inputs()
        x_compiled, x_eager = x.clone().requires_grad_(), x.clone().requires_grad_()
        run = run_attempt(ctx, example, inputs=(x_compiled,), model=model, grad=True)
        output = run.output
        expect(isinstance(output, torch.Tensor) and output.requires_grad,
               f"torch.compile({example.what()}, backend=your npu_backend) under autograd returned an output that "
               f"does not require grad: gradients cannot flow back to the parameters. Let aot_autograd handle "
               f"training graphs (or run them on the CPU, with a warning).")
        output.sum().backward()
        eager_model(x_eager).sum().backward()
        what = f"torch.compile({example.what()}, backend=your npu_backend) under autograd"
        torch.testing.assert_close(output, eager_model(x_eager), msg=lambda m: f"{what}: output differs:\n{m}")
        torch.testing.assert_close(x_compiled.grad, x_eager.grad, msg=lambda m: f"{what}: input gradient differs:\n{m}")
        for (name, p), (_, q) in zip(model.named_parameters(), eager_model.named_parameters()):
            torch.testing.assert_close(p.grad, q.grad, msg=lambda m, name=name: f"{what}: gradient of {name} differs:\n{m}")


# --- stage: fuzz ------------------------------------------------------------------------------------------------

def fusion_order_matters(spec) -> bool:
    """True when fusing before or after partitioning gives different (equally correct) counts.

    A Linear without bias on an input of more than two dimensions lowers to mm + _unsafe_view, and
    _unsafe_view is not in NPU_OPS. With a GELU after it, fusing the whole graph first moves the GELU in front
    of that CPU op (one NPU program), while fusing inside partitions cannot reach across it (two programs).
    The lesson allows both orders, so counts are not compared for such models.
    """
    return len(spec.batch_shape) > 1 and any(
        not layer.bias and layer.activation in ("gelu", "gelu_tanh") and layer.reuse == "none" for layer in spec.layers)


@CHECKS.check(stage="fuzz", weight=4)
def random_mlps_with_cpu_ops(ctx):
    "random MLPs with CPU-only ops mid-graph: eager's answer, supported ops on the NPU, counts like the reference"
    strategy = mlp_specs(activations=NPU_FRIENDLY_ACTIVATIONS + CPU_ONLY_ACTIVATIONS, styles=("modules", "functional"))

    def prop(spec):
        run = run_attempt(ctx, mlp_example(spec))
        expect_eager(run)
        expect_no_fallback(run)
        expect_supported_ops_on_npu(run)
        if not fusion_order_matters(spec):
            expect_counts_like_reference(ctx, run)

    fuzz(ctx, strategy, prop, describe=describe, max_examples=max(6, ctx.max_examples // 2))
