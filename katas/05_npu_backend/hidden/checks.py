"""Hidden checks for kata 5 (a torch.compile backend for the simulated NPU). Learners: solve the kata from
README.md, not from here.

Every check compiles a real model with `torch.compile(model, backend=<the attempt's npu_backend>)` and
compares the answer with eager. The code that runs the attempt inside torch machinery lives in probes.py and
returns plain data; this file judges it. What ran where is read from two witnesses the attempt does not
control:

- the NPU itself, read through `device_stats()` only: programs compiled, resident and run, launches, ops run,
  bytes uploaded (constants apart from per-run inputs), compile and runtime errors;
- a TorchDispatchMode around a repeated call of each compiled graph (probes.host_ops), recording every ATen
  op the host ran outside an NPU program.

Nothing here reads state the attempt's backend holds (its caches, its partitions): only the device, the
warnings, the outputs and the host-op recordings.

"Supported" means the NPU's own verdict: a compute op whose canonical name is in NPU_OPS. Layout ops
(t, permute, transpose, view, reshape) cost no launch and may run on either side. Partition and launch
counts are compared with the reference on models whose partitioning has one right answer (chains of
Linear layers with CPU ops between them), so any correct lowering passes.
"""
from __future__ import annotations

import contextlib
import copy
import re
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from checker.kit import load_module
from checker.kit import CheckFailed, Checks, Context, expect, fuzz
from checker.core.manifest import KATAS_DIR
from katas.common import describe, example_input
from katas.common.models import CPU_ONLY_ACTIVATIONS, NPU_FRIENDLY_ACTIVATIONS, LayerSpec, MLPSpec
from katas.common.npu import DEVICE, LAYOUT_OPS, NPU_OPS, DeviceService, NPUFallbackWarning, NPUStats
from katas.common.strategies import (NPU_INT_ARGUMENT_ELEMENTS, NPU_WORKLOAD_SLOTS, mlp_specs, npu_int_argument_calls,
                                      npu_workloads)
from katas.common.zoo import ZOO

probes = load_module(Path(__file__).with_name("probes.py"), "kata05_npu_backend_probes")
recipe = probes.recipe

CHECKS = Checks()
# The attempt runs in the checker's worker process; the NPU it compiles for and runs on is this process's DEVICE,
# served across the boundary, so the counters below are counted where the attempt cannot reach them.
CHECKS.services.update(DeviceService().handlers())
CHECKS.worker_setup.append("katas.common.npu:connect_to_device_service")

COMPUTE_NPU_OPS = NPU_OPS - LAYOUT_OPS
BACKEND_NAME = "kata_npu"


# --- the device: the one place the checks read it ----------------------------------------------------------

def device_stats() -> NPUStats:
    """What the NPU reports about itself (plain data). The checks read the device here and nowhere else."""
    return copy.deepcopy(DEVICE.stats)


def reset_device(*, release: bool = False, faults: int = 0) -> None:
    """Zero the NPU's counters (and, with `release`, empty its program memory); arm `faults` injected faults."""
    DEVICE.reset()
    if release:
        DEVICE.release_all()
        DEVICE.reset()  # releasing counts as releases; a fresh start shows none
    DEVICE.inject_fault(faults)


# --- models -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Example:
    """A model to compile: its recipe, its input shape, and one line saying what it is."""

    name: str
    recipe: dict  # probes.recipe(...): plain data, so that the worker can build the same model
    shape: tuple[int, ...]
    text: str

    @property
    def dtype(self) -> torch.dtype:
        return getattr(torch, self.recipe["dtype"])

    def inputs(self, shape: tuple[int, ...] | None = None, seed: int = 1) -> tuple[torch.Tensor, ...]:
        if self.recipe["spec"] is not None and shape is None:
            return (example_input(self.recipe["spec"]),)
        generator = torch.Generator().manual_seed(seed)
        return (torch.randn(*(shape or self.shape), generator=generator).to(self.dtype),)

    def what(self, shape: tuple[int, ...] | None = None) -> str:
        dtype = str(self.dtype).removeprefix("torch.")
        return f"`{self.name}` ({self.text}) on input {tuple(shape or self.shape)} {dtype}"


def first_sentence(doc: str | None, default: str) -> str:
    text = " ".join((doc or default).split())
    return text.split(". ")[0].rstrip(".")


def zoo(name: str, dtype: str = "float32", *, requires_grad: bool = True) -> Example:
    model = ZOO[name]
    text = first_sentence(model.factory.__doc__, name)
    if not requires_grad:
        text += "; after model.requires_grad_(False)"
    return Example(name, recipe(zoo=name, dtype=dtype, requires_grad=requires_grad), model.input_shape, text)


def local(name: str, *shape: int) -> Example:
    return Example(name, recipe(local=name), shape, first_sentence(probes.LOCAL_MODELS[name].__doc__, name))


def mlp_example(spec: MLPSpec, name: str = "random MLP", text: str = "") -> Example:
    return Example(name, recipe(spec=spec), (*spec.batch_shape, spec.in_features), text or describe(spec))


LONE_RELU = local("lone_relu", 3, 5)
SANDWICH = local("sandwich", 2, 6)
GRAPH_BREAK = local("graph_break_mlp", 2, 4)
RETURNS_PRE_ACTIVATION = local("returns_pre_activation", 3, 4)
# Bias-free Linear layers on a 3-D input: ATen computes each as view -> mm -> _unsafe_view.
BIAS_FREE_3D = tuple(
    mlp_example(MLPSpec(4, (LayerSpec(8, bias=False, activation=act), LayerSpec(3, bias=False, activation="none")),
                        batch_shape=(2, 5)), f"bias_free_{act}_mlp",
                f"Linear(4 -> 8, no bias) -> {act.upper() if act == 'gelu' else 'ReLU'} -> Linear(8 -> 3, no bias)")
    for act in ("gelu", "relu"))


# --- running a backend through the probes -------------------------------------------------------------------

def _unfinished_kata(exc: BaseException) -> str | None:
    """Which earlier kata's file raised NotImplementedError, if the attempt called an unfinished kata 3/4 stub."""
    if not isinstance(exc, NotImplementedError):
        return None
    remote = getattr(exc, "remote_traceback", "")  # raised in the worker: only its formatted traceback is here
    if remote:
        frames = re.findall(r'File "([^"]+)", line \d+, in (\S+)', remote)
        last = frames[-1] if frames else None
    else:
        tb = traceback.extract_tb(exc.__traceback__)
        last = (tb[-1].filename, tb[-1].name) if tb else None
    for slug in ("03_fusion_guard", "04_op_support"):
        folder = (KATAS_DIR / slug).resolve()
        if last and Path(last[0]).resolve().parent == folder:
            return f"{Path(last[0]).resolve().relative_to(KATAS_DIR.parent.resolve())} ({last[1]})"
    return None


class Backend:
    """Where a backend's probes run: the attempt's where its code runs (`ctx.probe`: the worker, when there is
    one), the reference's in this process."""

    def __init__(self, ctx: Context, which: str) -> None:
        self.ctx, self.which = ctx, which

    def probe(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """`fn(backend module, *args, **kwargs)`; an unfinished kata 3 or 4 the attempt calls reads as that."""
        if self.which == "reference":
            return fn(self.ctx.reference, *args, **kwargs)
        try:
            return self.ctx.probe(fn, *args, **kwargs)  # the worker's, or here when there is none (the oracle)
        except NotImplementedError as exc:
            where = _unfinished_kata(exc)
            if where:
                raise CheckFailed(f"your backend called {where}, which still raises NotImplementedError. "
                                  f"Kata 5 builds on your katas 3 and 4: finish them first (`make kata N=3`, "
                                  f"`make kata N=4`), or see README.md, 'Building blocks'.") from None
            raise


@dataclass
class Seen:
    """One call of a compiled model, as the checks saw it: output, eager's answer, the NPU's counters, warnings."""

    what: str
    output: Any
    expected: Any
    stats: NPUStats
    graphs: int
    fallbacks: list[str] = field(default_factory=list)  # NPUFallbackWarning messages
    other_warnings: list[str] = field(default_factory=list)

    @property
    def npu_line(self) -> str:
        return f"NPU: {self.stats.summary()}"


def sort_warnings(seen: Seen, caught: list[tuple[str, str]]) -> None:
    for category, message in caught:
        if category == NPUFallbackWarning.__name__:
            seen.fallbacks.append(message)
        elif any(word in message.lower() for word in ("cpu", "npu", "fall")):
            seen.other_warnings.append(f"{category}: {message}")


class Compiled:
    """`torch.compile(model, backend=...)` of one example, living in the probes, and the checks' own eager twin."""

    def __init__(self, backend: Backend, example: Example, *, by_name: bool = False, keep_memory: bool = False):
        self.backend, self.example = backend, example
        self.label = "the reference" if backend.which == "reference" else (
            repr(BACKEND_NAME) if by_name else "your npu_backend")
        self.session = backend.probe(probes.compile_model, example.recipe, by_name=by_name)
        self.eager = probes.build(example.recipe)
        # each compiled model starts with an empty NPU, unless the check looks at what the previous one left
        reset_device(release=not keep_memory)

    def what(self, shape: tuple[int, ...] | None = None) -> str:
        return f"torch.compile({self.example.what(shape)}, backend={self.label})"

    def call(self, inputs: tuple | None = None, *, faults: int = 0, what: str = "", grad: bool = False) -> Seen:
        """Call the compiled model once under no_grad (with `grad`, with autograd on), with fresh NPU counters and
        `faults` injected faults."""
        inputs = inputs or self.example.inputs()
        what = what or self.what(tuple(inputs[0].shape))
        reset_device(faults=faults)
        called = self.backend.probe(probes.call, self.session, tuple(inputs), grad)
        stats = device_stats()
        expect(called.error is None,
               f"{what} raised NPURuntimeError: {called.error}\nA failed NPU run must not reach the user: catch "
               f"NPURuntimeError around each program call and rerun that partition on the CPU for this call (with "
               f"an NPUFallbackWarning).")
        expect(stats.release_all_calls == 0,
               f"{what} called DEVICE.release_all(), which empties the whole NPU: on a real device every program "
               f"of other code goes too (here it raised RuntimeError). Release only the programs your backend "
               f"compiled, the one used longest ago first (README.md, 'When program memory is full').")
        with torch.no_grad():
            expected = self.eager(*inputs)
        seen = Seen(what, called.output, expected, stats, called.graphs)
        sort_warnings(seen, called.warnings)
        return seen

    def host_ops(self) -> dict[str, int]:
        return self.backend.probe(probes.host_ops, self.session)

    def scale_parameter(self, name: str, factor: float) -> None:
        """The same in-place change, in the compiled model and in the eager twin."""
        self.backend.probe(probes.scale_parameter, self.session, name, factor)
        with torch.no_grad():
            self.eager.get_parameter(name).mul_(factor)


    def stash_tensors(self, tensors: list[torch.Tensor]) -> None:
        self.backend.probe(probes.stash_tensors, self.session, tensors)
        self.stash = [t.clone() for t in tensors]

    def use_stashed_data(self, name: str, index: int) -> None:
        """`param.data = stashed tensor <index>`, in the compiled model and in the eager twin."""
        self.backend.probe(probes.use_stashed_data, self.session, name, index)
        self.eager.get_parameter(name).data = self.stash[index].clone()


def run_attempt(ctx: Context, example: Example, inputs: tuple | None = None) -> Seen:
    """Compile `example` with the attempt's backend and call it once."""
    return Compiled(attempt(ctx), example).call(inputs)


def attempt(ctx: Context) -> Backend:
    return Backend(ctx, "attempt")


def canonical(op: str) -> str:
    """"aten.addmm.default" -> "addmm"."""
    parts = op.split(".")
    return parts[1] if len(parts) >= 2 else op


def ops_text(ops: dict[str, int]) -> str:
    return ", ".join(f"{op} x{n}" for op, n in sorted(ops.items())) or "none"


def param_bytes(example: Example) -> int:
    return sum(p.numel() * p.element_size() for p in probes.build(example.recipe).parameters())


# --- expectations ------------------------------------------------------------------------------------------------

def expect_eager(seen: Seen, *, after: str = "",
                 advice: str = "Every fallback and every NPU program must compute exactly what eager computes.") -> None:
    """The call matched eager; else fail naming the call, what changed before it (`after`) and what to do."""
    try:
        torch.testing.assert_close(seen.output, seen.expected)
    except AssertionError as error:
        raise CheckFailed(f"{seen.what} does not match eager{after}:\n{error}\n{seen.npu_line}\n{advice}") from None


def expect_supported_ops_on_npu(compiled: Compiled, seen: Seen) -> None:
    """No compute op the NPU supports ran on the host."""
    on_cpu = {op: n for op, n in compiled.host_ops().items() if canonical(op) in COMPUTE_NPU_OPS}
    expect(not on_cpu,
           f"{seen.what} ran ops the NPU supports on the CPU: {ops_text(on_cpu)}.\n{seen.npu_line}\nThe NPU runs "
           f"every op in NPU_OPS, so these belong in NPU partitions. If the NPU ran nothing at all, your op table "
           f"probably does not match the graph it classifies (aten names against a Dynamo graph of torch "
           f"functions?) and everything went to the CPU without a sound: CPU fallback is a safety net, not the "
           f"default. If only a few ops stayed behind, each alone between CPU ops (a fused kata.linear_gelu is one "
           f"node), CapabilityBasedPartitioner dropped their single-node partitions: pass "
           f"allows_single_node_partition=True (README.md, 'The pipeline', step 3).")


def expect_no_fallback(seen: Seen) -> None:
    # a memory-full refusal is how an LRU cache learns that it must release a program first: not a fallback
    errors = [error for error in seen.stats.compile_errors if "program memory is full" not in error]
    expect(not errors,
           f"{seen.what} sent a graph to NPU.compile that it rejected: {errors[0] if errors else ''}\nThis model is "
           f"float32 and every call has a static shape, so the only reasons to reject are an op the NPU cannot run "
           f"(one unsupported node sends its whole partition back to the CPU: classify the ATen graph you compile "
           f"and keep such nodes out of NPU partitions; `a @ b` is \"matmul\" in a Dynamo graph but expand + bmm + "
           f"_unsafe_view in ATen) or a full program memory.")
    expect(not seen.fallbacks,
           f"{seen.what} warned that work fell back to the CPU: {seen.fallbacks[:1]}\nNothing here should fall "
           f"back: float32, a shape the NPU can compile, no faults, room in program memory.\n{seen.npu_line}")


_REFERENCE_STATS: dict[tuple, NPUStats] = {}


def reference_stats(ctx: Context, example: Example) -> NPUStats:
    """What one call of `example` compiled with the reference backend does on the NPU (cached per example)."""
    key = (example.name, example.text, example.shape)
    if key not in _REFERENCE_STATS:
        _REFERENCE_STATS[key] = Compiled(Backend(ctx, "reference"), example).call().stats
    return _REFERENCE_STATS[key]


def expect_counts_like_reference(ctx: Context, seen: Seen, example: Example) -> None:
    """Programs and launches per call equal the reference's. Call it after everything else about the attempt's
    session: compiling the reference starts a new session."""
    got, want = seen.stats, reference_stats(ctx, example)
    expect((got.runs, got.launches) == (want.runs, want.launches),
           f"{seen.what} ran {got.runs} NPU program(s) with {got.launches} launch(es) in one call; the reference runs "
           f"{want.runs} program(s) with {want.launches} launch(es).\nyours:     {got.summary()}\nreference: "
           f"{want.summary()}\nOne program per maximal group of connected NPU nodes (a partition), one launch per "
           f"compute node, and a fused Linear+GELU is a single launch. More programs: partitions were split (a "
           f"layout op left on the CPU?) or supported nodes left out; fewer: supported nodes never reached the NPU; "
           f"more launches: a missed fusion.")


def names_shape(text: str, shape: tuple[int, ...]) -> bool:
    """Whether `text` spells `shape` in any of the usual ways: (2, 4), [2, 4], torch.Size([2, 4]), 2x4."""
    dims = r"[\s,x×\[\]()]{1,4}".join(str(d) for d in shape)
    return re.search(rf"(?<![\d.]){dims}(?![\d.])", text) is not None


UNNAMED_PROGRAM = re.compile(r"npu_program_\d+")


def expect_programs_named(seen: Seen) -> None:
    """The NPU's messages in this call name programs the backend named: `NPU.compile(..., name=partition name)`."""
    texts = [*seen.stats.runtime_errors, *seen.stats.compile_errors, *seen.fallbacks]
    unnamed = sorted({m.group(0) for text in texts for m in UNNAMED_PROGRAM.finditer(text)})
    expect(not unnamed,
           f"{seen.what}: the NPU's messages name program(s) {', '.join(unnamed)}, the names NPU.compile makes up "
           f"when it is given none, so neither the NPU's errors nor your warning say which partition this was. "
           f"Compile each program with name= its partition's name (the submodule's, such as 'npu_partition_0'; "
           f"README.md, 'New shapes'). Warned: {seen.fallbacks[:1]}")


def expect_fallback_warning(seen: Seen, reason_words: tuple[str, ...], *, must_name: tuple[int, ...] = (),
                            one_per: str = "") -> None:
    """`seen` warned with NPUFallbackWarning, in words that give the reason (and name the input shape `must_name`,
    if given, in any spelling), about a partition it names. `one_per` says that an earlier call already warned
    about another signature of the same partition."""
    other = (f"\nYou did warn, but not with NPUFallbackWarning: {seen.other_warnings[:2]}. The category is the "
             f"contract: it is what users filter on, and what tools count." if seen.other_warnings else "")
    expect(seen.fallbacks or not one_per,
           f"{seen.what} gave eager's answer on the CPU but no NPUFallbackWarning. Your backend warned about the "
           f"first signature this partition was refused, and not about this one: every refused signature warns when "
           f"it is refused, naming its own input shapes, because each is a different set of calls that now runs on "
           f"the CPU (README.md, 'When program memory is full').\n{seen.npu_line}")
    expect(seen.fallbacks,
           f"{seen.what} gave eager's answer but no NPUFallbackWarning. Falling back to the CPU is fine; doing it "
           f"silently is not: the user believes the NPU ran their model. Warn with warnings.warn(..., "
           f"NPUFallbackWarning) naming the partition or node and the reason.{other}\n{seen.npu_line}")
    text = " ".join(seen.fallbacks).lower()
    expect(any(word in text for word in reason_words),
           f"{seen.what} warned {seen.fallbacks[:2]}, which does not say why (expected a mention of "
           f"{' or '.join(repr(w) for w in reason_words)}). Put the NPU's error message in the warning: it names "
           f"the node and the reason.")
    expect_programs_named(seen)
    expect(not must_name or names_shape(text, must_name),
           f"{seen.what} warned {seen.fallbacks[:2]}, which does not name the input shape {must_name}. A user "
           f"reading it must learn which calls run on the CPU: put the shapes of this call's inputs in the message "
           f"(the NPU's memory-full error names them; a float64 refusal's does not, so add them yourself).")


def expect_not_left_to_dynamo(seen: Seen, backend: Backend) -> None:
    """A call that neither ran, compiled, nor asked NPU.compile anything, nor warned, never reached the backend:
    when the attempt changed torch._dynamo.config, say that that is why."""
    untouched = (not seen.fallbacks and not seen.stats.compile_errors and not seen.stats.programs_compiled
                 and not seen.stats.runs)
    changed = dynamo_config_changes(backend) if untouched else {}
    expect(not untouched or not changed,
           f"{seen.what} never reached your backend: no NPU program ran or was asked for, and nothing warned. Dynamo "
           f"ran it in eager itself, because your module changed torch._dynamo.config ({config_text(changed)}): "
           f"with that setting Dynamo compiles one graph per shape and gives up at its recompile_limit. A backend "
           f"must work with the defaults (README.md, 'What Dynamo hands a backend').")


# --- torch._dynamo.config: the user's, not the backend's -------------------------------------------------------

# Keys of torch._dynamo.config off their defaults in this process before any attempt is imported (the checker's own)
DYNAMO_CONFIG_AT_LOAD = probes.dynamo_config_changes()


def dynamo_config_changes(backend: Backend) -> dict[str, tuple[str, str]]:
    """Keys of torch._dynamo.config the backend's process has changed: key -> (the checker's value, its value)."""
    theirs = backend.probe(probes.dynamo_config_changes)
    keys = sorted(set(theirs) | set(DYNAMO_CONFIG_AT_LOAD))
    return {k: (DYNAMO_CONFIG_AT_LOAD.get(k, "its default"), theirs.get(k, "its default")) for k in keys
            if theirs.get(k) != DYNAMO_CONFIG_AT_LOAD.get(k)}


def config_text(changed: dict[str, tuple[str, str]]) -> str:
    return ", ".join(f"torch._dynamo.config.{k} is {new} (was {old})" for k, (old, new) in changed.items())


# --- stage: register -----------------------------------------------------------------------------------------

@CHECKS.check(stage="register", weight=2)
def registered_as_kata_npu(ctx):
    "importing backend.py registers npu_backend as \"kata_npu\", and importing it twice works"
    expect_eager(run_attempt(ctx, zoo("mlp")))  # first: does the backend work at all?
    name = Path(ctx.attempt.__file__).name
    registered = attempt(ctx).probe(probes.registered_backend)  # as the attempt's own import left it
    again = attempt(ctx).probe(probes.reimport)
    expect(again.error is None,
           f"importing {name} a second time raised {again.error}\ntorch._dynamo.register_backend refuses a name "
           f"that is already taken. The checker (and importlib.reload, and notebooks) import a module more than "
           f"once: replace the earlier entry, or skip registering when the name is already yours.")
    expect(again.registered,
           f"after importing {name}, torch._dynamo.list_backends() has no {BACKEND_NAME!r}: register npu_backend "
           f"when the module is imported (torch._dynamo.register_backend(npu_backend, name=...)).")
    expect(registered == "npu_backend",
           f"torch.compile(model, backend={BACKEND_NAME!r}) does not reach the npu_backend defined in {name}: the name "
           f"is registered to {registered}. Register npu_backend itself (or a function that calls it), so that "
           f"compiling by name and passing npu_backend directly do the same thing.")
    expect_eager(Compiled(attempt(ctx), zoo("mlp"), by_name=True).call())


@CHECKS.check(stage="register", weight=1)
def dynamo_config_left_alone(ctx):
    "importing backend.py and compiling with it leaves torch._dynamo.config as it was"
    expect_eager(run_attempt(ctx, zoo("mlp")))  # import time and backend time both count
    changed = dynamo_config_changes(attempt(ctx))
    expect(not changed,
           f"after importing {Path(ctx.attempt.__file__).name} and compiling the `mlp` zoo model with it, "
           f"{config_text(changed)}.\nDo not change torch._dynamo.config from your module: it changes every "
           f"torch.compile in the user's process, not only yours. A backend does not choose how it is called; it "
           f"must work with the defaults, a symbolic batch size included (README.md, 'What Dynamo hands a "
           f"backend'). Look for assignments to torch._dynamo.config in your file, at import or in npu_backend.")


# --- stage: offload ------------------------------------------------------------------------------------------

FULLY_SUPPORTED = ("mlp", "mlp_3d", "residual", "functional", "pointwise", "fused_linear_gelu")


@CHECKS.check(stage="offload", weight=4)
def supported_models_run_entirely_on_npu(ctx):
    "models made only of NPU ops run entirely on the NPU, as one program"
    for name in FULLY_SUPPORTED:
        compiled = Compiled(attempt(ctx), zoo(name))
        seen = compiled.call()
        expect_eager(seen)
        expect_no_fallback(seen)
        expect_supported_ops_on_npu(compiled, seen)
        expect(seen.stats.runs == 1,
               f"{seen.what} ran {seen.stats.runs} NPU programs in one call; every op of this model is supported and "
               f"they are all connected, so they form one partition: one program.\n{seen.npu_line}")


MIXED = ("norm_block", "attention", "renamed")


@CHECKS.check(stage="offload", weight=3)
def unsupported_ops_stay_on_cpu(ctx):
    "ops the NPU cannot run go to the CPU, without costing their neighbours the NPU"
    for example in (*map(zoo, MIXED), SANDWICH):
        compiled = Compiled(attempt(ctx), example)
        seen = compiled.call()
        expect_eager(seen)
        expect_no_fallback(seen)
        expect_supported_ops_on_npu(compiled, seen)
        expect(seen.stats.runs >= 1, f"{seen.what} ran nothing on the NPU.\n{seen.npu_line}")


@CHECKS.check(stage="offload", weight=2)
def lone_supported_op_runs_on_npu(ctx):
    "a single supported op between two CPU ops still runs on the NPU"
    seen = run_attempt(ctx, LONE_RELU)
    expect_eager(seen)
    expect_no_fallback(seen)
    expect(seen.stats.ops_run.get("relu", 0) == 1,
           f"{seen.what}: relu did not run on the NPU.\n{seen.npu_line}\nA partition of one node is still a "
           f"partition. CapabilityBasedPartitioner drops single-node partitions unless you pass "
           f"allows_single_node_partition=True (and then placeholders must not count as supported, or they get "
           f"pulled in).")


POSITION_IDS = local("position_ids", 2, 5, 4)
MASKED_BY_BOOL = local("masked_by_bool", 3, 4)


@CHECKS.check(stage="offload", weight=2)
def integer_work_stays_on_the_host(ctx):
    "integer work (an int64 add, muls reading bool and int32 masks) stays on the CPU; the float ops around run on the NPU"
    for shape in ((2, 5, 4), (3, 7, 4)):
        compiled = Compiled(attempt(ctx), POSITION_IDS)
        seen = compiled.call(POSITION_IDS.inputs(shape))
        expect_eager(seen)
        int64 = [e for e in seen.stats.compile_errors if "int64" in e]
        expect(not int64,
               f"{seen.what} sent an int64 node to NPU.compile, which refused the partition: {int64[:1]}\n"
               f"{seen.npu_line}\n`arange(seq) + 1` computes position ids: integer work, the host's job like size "
               f"arithmetic. Partition only nodes that read and make floating-point tensors (node.meta['val']), or the "
               f"refusal sends every float op of that partition to the CPU (README.md, 'The pipeline', step 3).")
        expect_no_fallback(seen)
        expect(seen.stats.ops_run.get("mul", 0) == 1 and seen.stats.ops_run.get("add", 0) == 1,
               f"{seen.what}: the float mul and add (x * 2.0 + embedding) did not both run on the NPU.\n{seen.npu_line}")
    # The rule's other half: a node that *reads* a bool or integer tensor, even one that makes a float.
    for shape in ((3, 4), (5, 4)):
        seen = run_attempt(ctx, MASKED_BY_BOOL, MASKED_BY_BOOL.inputs(shape))
        expect_eager(seen)
        refused = [e for e in seen.stats.compile_errors if "bool" in e or "int32" in e]
        expect(not refused,
               f"{seen.what} sent NPU.compile a partition that reads a bool or int32 tensor, which it refused: "
               f"{refused[:1]}\n{seen.npu_line}\n`h * (x[..., :1] > 0)` makes a float but reads a bool mask (and "
               f"`h * mask.to(torch.int32)` an int32 one): the lesson keeps a "
               f"node that reads *or* makes an integer or bool tensor on the host (README.md, 'The pipeline', step 3), "
               f"so look at the node's inputs' meta['val'] as well as its own.")
        expect_no_fallback(seen)
        expect_counts_like_reference(ctx, seen, MASKED_BY_BOOL)


# --- stage: partition -----------------------------------------------------------------------------------------

@CHECKS.check(stage="partition", weight=3)
def partitions_and_launches_match_reference(ctx):
    "NPU programs and launches per call equal the reference's on models with CPU ops between NPU ops"
    for example in (SANDWICH, zoo("norm_block"), zoo("renamed"), LONE_RELU):
        seen = run_attempt(ctx, example)
        expect_eager(seen)
        expect_counts_like_reference(ctx, seen, example)


@CHECKS.check(stage="partition", weight=2)
def graph_break_gives_two_npu_graphs(ctx):
    "a model with a graph break: both graphs run on the NPU"
    compiled = Compiled(attempt(ctx), GRAPH_BREAK)
    seen = compiled.call()
    expect(seen.graphs == 2, f"internal: Dynamo handed the backend {seen.graphs} graph(s), expected 2")
    expect_eager(seen)
    expect_no_fallback(seen)
    expect_supported_ops_on_npu(compiled, seen)
    expect(seen.stats.runs == 2,
           f"{seen.what}: Dynamo called your backend twice, once per graph, and one call of the model ran "
           f"{seen.stats.runs} NPU program(s), expected 2 (one per graph). Every graph is compiled on its own; state "
           f"kept between backend calls must not mix them up.\n{seen.npu_line}")


@CHECKS.check(stage="partition", weight=3)
def layout_ops_do_not_split_partitions(ctx):
    "bias-free Linear layers on a 3-D input (mm + _unsafe_view) run as one NPU program, nothing on the host"
    for example in BIAS_FREE_3D:
        compiled = Compiled(attempt(ctx), example)
        seen = compiled.call()
        expect_eager(seen)
        expect_no_fallback(seen)
        host = compiled.host_ops()
        expect(seen.stats.runs == 1 and not host,
               f"{seen.what} ran {seen.stats.runs} NPU program(s) per call, and between them the host ran "
               f"{ops_text(host)}.\n{seen.npu_line}\nEvery op here is NPU work or a pure layout change: it should be "
               f"one program and nothing on the host. A bias-free Linear on a 3-D input lowers to view -> mm -> "
               f"aten._unsafe_view, and `_unsafe_view` is not in NPU_OPS, so it cuts the partition in two and sends "
               f"the activations to host memory and back. It is `view` without autograd's alias tracking: rewrite "
               f"it to aten.view.default before partitioning (README.md, 'Legalise before you partition').")


# --- stage: fusion --------------------------------------------------------------------------------------------

@CHECKS.check(stage="fusion", weight=3)
def linear_gelu_is_one_launch(ctx):
    "Linear -> GELU runs as one fused launch on the NPU"
    for name in ("mlp", "mlp_3d", "residual"):
        seen = run_attempt(ctx, zoo(name))
        expect_eager(seen)
        fused, gelus = seen.stats.ops_run.get("linear_gelu", 0), seen.stats.ops_run.get("gelu", 0)
        expect(fused == 1 and gelus == 0,
               f"{seen.what} ran linear_gelu x{fused} and gelu x{gelus} on the NPU; its Linear -> GELU pair should "
               f"run as one kata.linear_gelu launch.\n{seen.npu_line}\nRun your kata 3 pass (fuse_linear_gelu) on "
               f"each NPU partition before NPU.compile: two launches become one, and the intermediate never leaves "
               f"the NPU's memory.")
        expect_counts_like_reference(ctx, seen, zoo(name))


@CHECKS.check(stage="fusion", weight=1)
def unsafe_pair_is_not_fused(ctx):
    "a Linear whose output is also returned is not fused, and still runs on the NPU (2-D and 3-D inputs)"
    # A 3-D input lowers the Linear to view -> addmm -> view: the other reader is then the view's, not the addmm's.
    for shape in ((3, 4), (2, 3, 4)):
        compiled = Compiled(attempt(ctx), RETURNS_PRE_ACTIVATION)
        seen = compiled.call(RETURNS_PRE_ACTIVATION.inputs(shape))
        expect_eager(seen)
        expect(seen.stats.ops_run.get("linear_gelu", 0) == 0,
               f"{seen.what} fused Linear -> GELU although the Linear's output is also returned: kata 3's single-user "
               f"guard must hold inside NPU partitions too, also when the Linear's output reaches its readers "
               f"through a view.\n{seen.npu_line}")
        expect_supported_ops_on_npu(compiled, seen)


# --- stage: shapes ----------------------------------------------------------------------------------------------

SYMBOLIC_HINT = ("After a new batch size Dynamo recompiles the model with a symbolic batch size (s77), which no NPU "
                 "program can have; but every call has a concrete shape. Compile an NPU program for each concrete "
                 "input signature when it is first called, keep it, and reuse it (README.md, 'New shapes'). Running "
                 "every later shape on the CPU leaves the accelerator idle.")


def expect_on_npu_for_new_shape(seen: Seen, *, compiled_at_most: int, compiled_at_least: int, why: str,
                                idle_hint: str = SYMBOLIC_HINT) -> None:
    """One call of a one-partition model: on the NPU, no warning, and a number of programs compiled."""
    expect_eager(seen)
    if seen.stats.runs == 0:
        raise CheckFailed(f"{seen.what}: the NPU ran nothing, and your backend warned "
                          f"{seen.fallbacks[:1] or 'nothing'}.\n{seen.npu_line}\n{idle_hint}")
    expect_no_fallback(seen)
    expect(seen.stats.runs == 1,
           f"{seen.what} ran {seen.stats.runs} NPU programs; this model is one partition: one program per call.\n"
           f"{seen.npu_line}")
    got = seen.stats.programs_compiled
    expect(compiled_at_least <= got <= compiled_at_most,
           f"{seen.what} compiled {got} NPU program(s) in this call; expected "
           f"{compiled_at_most if compiled_at_least == compiled_at_most else f'at most {compiled_at_most}'}: {why}\n"
           f"{seen.npu_line}")


NEW_SHAPE = "a signature this graph has not seen: one program"
SEEN_SHAPE = ("a shape this graph ran before, whose program should still be in your cache. Key the cache by every "
              "input's shape and dtype (and every int input's value), not by something that changes each call, and "
              "do not throw programs away")


@CHECKS.check(stage="shapes", weight=3)
def new_batch_sizes_run_on_npu(ctx):
    "new batch sizes run on the NPU: one program compiled per new shape, none for a shape seen before"
    example = zoo("mlp")
    compiled = Compiled(attempt(ctx), example)
    for i, batch in enumerate((2, 5, 7, 9, 2, 5, 7, 9, 2)):
        seen = compiled.call(example.inputs((batch, 4), seed=batch))
        if i < 4:
            expect_on_npu_for_new_shape(seen, compiled_at_least=1, compiled_at_most=1, why=NEW_SHAPE)
        elif i == 4:  # Dynamo gives batch 2 to its newer, symbolic graph now; that graph may compile it once
            expect_on_npu_for_new_shape(seen, compiled_at_least=0, compiled_at_most=1,
                                        why="Dynamo hands batch 2 to the graph it compiled with a symbolic batch "
                                            "size, which may need its own program for it, once")
        else:
            expect_on_npu_for_new_shape(seen, compiled_at_least=0, compiled_at_most=0, why=SEEN_SHAPE)
    # Many signatures on a roomy NPU: while it has room every program stays, whatever bound a backend might invent.
    many = range(10, 10 + MANY_SHAPES)
    for batch in many:
        compiled.call(example.inputs((batch, 4), seed=batch))
    for batch in many:
        seen = compiled.call(example.inputs((batch, 4), seed=batch))
        expect_on_npu_for_new_shape(
            seen, compiled_at_least=0, compiled_at_most=0,
            why=f"the second pass over {MANY_SHAPES} batch sizes, with {seen.stats.programs_resident} of "
                f"{seen.stats.max_resident_programs} program slots in use: while the NPU has room, every program stays "
                f"(README.md: do not invent a bound of your own; release only when NPU.compile says memory is full)")


MANY_SHAPES = 28  # with the 4 above and Dynamo's symbolic graph, about half of the 64 slots


@CHECKS.check(stage="shapes", weight=1)
def dropped_models_release_their_programs(ctx):
    "a compiled model Dynamo drops releases its NPU programs: a new model starts with every slot free"
    example = zoo("mlp")
    first = Compiled(attempt(ctx), example)
    for batch in (2, 5, 7):
        first.call(example.inputs((batch, 4), seed=batch))
    resident = device_stats().programs_resident
    second = Compiled(attempt(ctx), example, keep_memory=True)  # torch._dynamo.reset(): the first model's graphs die
    second.backend.probe(probes.collect_garbage)
    # A backend may release at once (a finalizer) or note the death and release on its next call: both are done by
    # the time the next model has run once.
    seen = second.call(example.inputs((3, 4), seed=3))
    expect_eager(seen)
    left = seen.stats.programs_resident - 1
    expect(left == 0,
           f"torch.compile({example.what()}, backend=your npu_backend) ran batch sizes 2, 5 and 7 ({resident} programs "
           f"resident); then Dynamo dropped its graphs (torch._dynamo.reset(), gc.collect()) and a new model ran once "
           f"(one program), yet {seen.stats.programs_resident} program(s) are in NPU memory: {left} of the dead model's "
           f"stayed. README.md: a partition dies with its compiled graph; release its programs then "
           f"(weakref.finalize(partition, ...)), or they hold slots for graphs nobody calls, and a key built from "
           f"id(partition) could hand a new partition at the same address a program compiled for another graph.\n"
           f"{seen.npu_line}")


@CHECKS.check(stage="shapes", weight=2)
def every_dimension_is_part_of_the_signature(ctx):
    "inputs that differ in a non-batch dimension get programs of their own"
    example = zoo("mlp_3d")
    compiled = Compiled(attempt(ctx), example)
    for i, shape in enumerate(((2, 5, 4), (3, 7, 4), (3, 9, 4), (3, 7, 4), (3, 9, 4))):
        seen = compiled.call(example.inputs(shape, seed=i))
        if i < 3:
            expect_on_npu_for_new_shape(seen, compiled_at_least=1, compiled_at_most=1, why=NEW_SHAPE)
        else:
            expect_on_npu_for_new_shape(seen, compiled_at_least=0, compiled_at_most=0, why=SEEN_SHAPE)


@dataclass(frozen=True)
class SecondInputExample(Example):
    """`reshape_by_second_input`: x is always `shape`; what a call varies is the length of y, given as (len(y),)."""

    def inputs(self, shape: tuple[int, ...] | None = None, seed: int = 1) -> tuple[torch.Tensor, ...]:
        generator = torch.Generator().manual_seed(seed)
        return torch.randn(*self.shape, generator=generator), torch.zeros((shape or (2,))[0])

    def what(self, shape: tuple[int, ...] | None = None) -> str:
        return f"`{self.name}` ({self.text}) on x {self.shape} float32 and y of length {(shape or (2,))[0]}"


RESHAPE_BY_SECOND_INPUT = SecondInputExample(
    "reshape_by_second_input", recipe(local="reshape_by_second_input"), (NPU_INT_ARGUMENT_ELEMENTS // 4, 4),
    "relu(x).reshape(len(y), -1) * 2")


def play_int_argument_calls(ctx: Context, lengths: tuple[int, ...]) -> None:
    """Call `reshape_by_second_input` with y of each length in turn: Dynamo's first graph serves the first call, its
    symbolic one every later call, and each graph compiles one program per length it has not run yet."""
    example = RESHAPE_BY_SECOND_INPUT
    compiled = Compiled(attempt(ctx), example)
    compiled_by: set[tuple[str, int]] = set()
    for step, length in enumerate(lengths):
        key = ("first" if step == 0 else "second", length)
        new = key not in compiled_by
        compiled_by.add(key)
        what = (f"{example.what((length,))}, call {step + 1} of lengths {list(lengths)} (x's shape never changes; "
                f"from the second call on, the partition also takes the ints the host computed from len(y))")
        seen = compiled.call(example.inputs((length,), seed=step), what=what)
        expect_on_npu_for_new_shape(
            seen, compiled_at_least=int(new), compiled_at_most=int(new),
            why=(NEW_SHAPE + ": its int arguments differ from every program this graph holds, though its tensor "
                 "has the same shape") if new else SEEN_SHAPE,
            idle_hint="The partition's int arguments are part of its signature: a program compiled for one value "
                      "refuses another (NPURuntimeError). Key the cache by every tensor argument's shape and dtype "
                      "and every int argument's value (README.md, 'New shapes').")


@CHECKS.check(stage="shapes", weight=2)
def int_arguments_are_part_of_the_signature(ctx):
    "calls whose tensors keep their shapes while the host-computed int arguments change get programs of their own"
    fuzz(ctx, npu_int_argument_calls(), lambda lengths: play_int_argument_calls(ctx, lengths),
         describe=lambda lengths: f"len(y) in successive calls: {list(lengths)}", max_examples=3 if ctx.deep else 1)


class LeastRecentlyUsed:
    """What a correct backend holds in program memory, by the lesson's rule: programs keyed by (graph, signature),
    released least recently used first when the device is full; "used" is compiled or run."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.order: list[tuple] = []  # oldest use first

    def use(self, key: tuple) -> tuple[int, int]:
        """(programs compiled, programs released) by a call that needs the program `key`."""
        if key in self.order:
            self.order.remove(key)
            self.order.append(key)
            return 0, 0
        released = 0
        while len(self.order) >= self.slots:
            self.order.pop(0)
            released += 1
        self.order.append(key)
        return 1, released

    def drop(self, graph: str) -> int:
        """Release every program of `graph` (its frozen parameters changed); how many."""
        stale = [key for key in self.order if key[0] == graph]
        self.order = [key for key in self.order if key[0] != graph]
        return len(stale)

    def text(self) -> str:
        return ", ".join(f"{shape} ({graph} graph)" for graph, shape in self.order) or "none"


@contextlib.contextmanager
def small_npu(slots: int):
    """The checks' NPU with `slots` program slots for a while (a smaller device of the same kind)."""
    saved = DEVICE.max_resident_programs
    DEVICE.release_all()
    DEVICE.max_resident_programs = slots
    DEVICE._sync_memory_stats()  # noqa: SLF001 - the checks own the device
    try:
        yield
    finally:
        DEVICE.release_all()
        DEVICE.max_resident_programs = saved
        DEVICE._sync_memory_stats()  # noqa: SLF001


def expect_least_recently_used(seen: Seen, backend: Backend, lru: LeastRecentlyUsed, compiled: int, released: int,
                               *, history: str) -> None:
    """The call compiled what the LRU rule says, and program memory holds what it says (`released` is what the
    rule releases in this call; programs dropped without release() count once the garbage collector frees them)."""
    got = seen.stats
    if got.programs_released < released or len(lru.order) != device_stats().programs_resident:
        backend.probe(probes.collect_garbage)  # programs dropped without release() are freed by their finalizers
    resident = device_stats().programs_resident
    rule = ("When NPU.compile says program memory is full, release the program your backend used longest ago "
            "(compiled or run; over every partition of every graph), then compile again (README.md, 'When program "
            "memory is full').")
    why = ("no program of this signature is resident by the lesson's rules (new, or released earlier to make room), "
           "so it compiles one" if compiled else
           "its program is still resident by the lesson's rules: the programs used longer ago go first")
    expect(got.programs_compiled == compiled,
           f"{seen.what} compiled {got.programs_compiled} program(s); expected {compiled}: {why}.\n"
           f"The calls so far: {history}\nA correct backend now holds (oldest use first): {lru.text()}\n"
           f"{seen.npu_line}\n{rule}")
    expect(resident == len(lru.order),
           f"{seen.what}: program memory holds {resident} program(s) after this call; by the lesson's rules "
           f"{len(lru.order)}: {lru.text()}.\nThe calls so far: {history}\n{seen.npu_line}\n"
           + (rule if resident < len(lru.order) else
              "Release stale programs when a frozen parameter changes (README.md, 'Weights: upload once'), and "
              "release the least recently used one when memory is full."))


@CHECKS.check(stage="shapes", weight=3)
def full_program_memory_releases_the_least_recently_used(ctx):
    "on a full NPU a new shape releases the program used longest ago and runs on the NPU; others stay resident"
    example = zoo("mlp")
    slots = 6
    with small_npu(slots):
        compiled = Compiled(attempt(ctx), example)
        lru = LeastRecentlyUsed(slots)
        history: list[str] = []
        # fill (batch 2 in Dynamo's first graph, the rest in the symbolic one), overflow, then shapes seen before:
        # 3 was used again just before 9 overflowed, so 4 goes first, then 5: least recently used, not first compiled
        for batch in (2, 3, 4, 5, 6, 7, 3, 8, 9, 4, 3, 5, 7):
            graph = "first" if batch == 2 and not history else "second"
            want_compiled, want_released = lru.use((graph, batch))
            history.append(f"({batch}, 4)")
            seen = compiled.call(example.inputs((batch, 4), seed=batch))
            seen.what += f" on an NPU of {slots} program slots"
            expect_not_left_to_dynamo(seen, compiled.backend)
            expect_on_npu_for_new_shape(
                seen, compiled_at_least=0, compiled_at_most=1, why="one partition: at most one program per call",
                idle_hint=SYMBOLIC_HINT if batch == 3 else
                f"The NPU was full ({slots} of {slots} programs), and the lesson's rule keeps it working: release the "
                f"program your backend used longest ago and compile this shape's (README.md, 'When program memory "
                f"is full'). Running new shapes on the CPU once memory is full leaves the NPU idle for good.")
            expect_least_recently_used(seen, compiled.backend, lru, want_compiled, want_released,
                                       history=", ".join(history))


@CHECKS.check(stage="shapes", weight=2)
def memory_others_hold_falls_back_for_that_call(ctx):
    "with program memory full of programs your backend does not hold: that call on the CPU, warned; later ones ask again"
    example = zoo("mlp")
    slots = 3
    with small_npu(slots):
        compiled = Compiled(attempt(ctx), example)
        first = compiled.call(example.inputs((2, 4), seed=2))
        expect_on_npu_for_new_shape(first, compiled_at_least=1, compiled_at_most=1, why=NEW_SHAPE)
        DEVICE.release_all()  # now a program of someone else's fills every slot
        squatters = [probes.occupy_slot(f"other_{i}") for i in range(slots)]
        for i, batch in enumerate((5, 6)):
            seen = compiled.call(example.inputs((batch, 4), seed=batch))
            seen.what += f", while other code holds all {slots} slots of program memory (your backend holds none)"
            expect_eager(seen)
            expect(seen.stats.runs == 0,
                   f"{seen.what}: an NPU program ran, so the backend released a program it did not own.\n"
                   f"{seen.npu_line}")
            expect_fallback_warning(seen, ("memory", "full"), must_name=(batch, 4),
                                    one_per="refused signature" if i else "")
        for program in squatters:
            program.release()
        again = compiled.call(example.inputs((5, 4), seed=5))
        again.what += ", called again once program memory had room"
        expect_on_npu_for_new_shape(
            again, compiled_at_least=1, compiled_at_most=1,
            why="a full memory is not an answer about this graph: ask NPU.compile again on the next call",
            idle_hint="The NPU refused this shape only because its memory was full of other programs, which are gone "
                      "now. Do not remember a memory-full refusal: the next call asks NPU.compile again (README.md, "
                      "'When program memory is full').")


# --- stage: weights ---------------------------------------------------------------------------------------------

WEIGHTED = ("mlp", "mlp_3d", "residual", "functional", "fused_linear_gelu")
# parameters that do not require grad (model.requires_grad_(False)) are still nn.Parameters, and still frozen
FROZEN_WITHOUT_GRAD = (zoo("mlp", requires_grad=False),)


@CHECKS.check(stage="weights", weight=3)
def weights_are_uploaded_once(ctx):
    "in inference, the weights cross to the NPU once, as program constants: a repeated call uploads only its input"
    # with autograd on, a model whose parameters require no grad still gets aot_autograd's inference graph
    cases = [(example, False) for example in map(zoo, WEIGHTED)] + [
        (example, grad) for example in FROZEN_WITHOUT_GRAD for grad in (False, True)]
    for example, grad in cases:
        compiled = Compiled(attempt(ctx), example)
        first = compiled.call(grad=grad)
        expect_eager(first)
        mode = (", called with autograd on (no torch.no_grad()): nothing requires grad, so aot_autograd hands this "
                "graph to inference_compiler") if grad else ""
        seen = compiled.call(what=f"the second call of {compiled.what()}{mode}", grad=grad)
        expect_eager(seen)
        expect_no_fallback(seen)
        (x,) = example.inputs()
        activations, weights = x.numel() * x.element_size(), param_bytes(example)
        got = seen.stats
        expect(got.runs == 1 and got.input_bytes_to_device == activations and got.constant_bytes_to_device == 0,
               f"{seen.what} sent {got.bytes_to_device} B to the NPU ({got.input_bytes_to_device} B of program inputs, "
               f"{got.constant_bytes_to_device} B of constants); the input is {activations} B and the parameters "
               f"{weights} B.\n{seen.npu_line}\nIn inference the parameters do not change between calls: freeze them "
               f"into the program as constants (get_attr nodes), which NPU.compile uploads once, so that each call "
               f"sends only its activations (README.md, 'Weights: upload once'). The parameters are the arguments "
               f"that are nn.Parameters, whether or not they require grad: a model after requires_grad_(False) is "
               f"the usual inference set-up, and its parameters are still parameters.")


@CHECKS.check(stage="weights", weight=2)
def changed_weights_are_uploaded_again(ctx):
    "a parameter changed in place (optimizer step, load_state_dict) is uploaded again; no program runs stale weights"
    example = zoo("mlp")
    compiled = Compiled(attempt(ctx), example)
    for batch in (2, 5, 7):
        expect_eager(compiled.call(example.inputs((batch, 4), seed=batch)))
    compiled.backend.probe(probes.collect_garbage)
    resident = device_stats().programs_resident
    compiled.scale_parameter("fc1.weight", -0.5)
    for batch in (5, 7):
        what = (f"{compiled.what((batch, 4))}, called after `model.fc1.weight.mul_(-0.5)` under torch.no_grad() (a "
                f"batch size it ran before)")
        seen = compiled.call(example.inputs((batch, 4), seed=batch), what=what)
        expect_eager(seen, after=" with the new weight", advice=(
            "A frozen weight is the program's own copy: when the host tensor changes, the copy is stale. Remember "
            "each frozen parameter by identity and version (`tensor._version` grows with every in-place change) "
            "and compile again when either differs (README.md, 'Weights: upload once')."))
        expect_no_fallback(seen)
        expect(seen.stats.runs == 1,
               f"{what} ran {seen.stats.runs} NPU programs; a changed weight is uploaded again (a new program), and "
               f"the call still runs on the NPU.\n{seen.npu_line}")
        if batch == 5:  # the program batch 7 froze is as stale as batch 5's, though batch 7 was not called yet
            compiled.backend.probe(probes.collect_garbage)
            now = device_stats().programs_resident
            expect(now <= resident - 1,
                   f"{what}: before the change {resident} NPU programs were resident (batch 2 in Dynamo's first "
                   f"graph, batches 5 and 7 in its second), and after this call {now} are. The second graph's "
                   f"program for batch 7 froze the old weight too and still takes program memory: when a frozen "
                   f"parameter changes, drop every program of that partition, every signature's, not only the one "
                   f"being called (README.md, 'Weights: upload once').")
    compiled.backend.probe(probes.collect_garbage)  # a dropped program is freed once it is garbage
    now = device_stats().programs_resident
    expect(now <= resident,
           f"{compiled.what()}: before `model.fc1.weight.mul_(-0.5)` {resident} NPU programs were resident, and after "
           f"two calls with the new weight {now} are: the programs with the old weight still take program memory, "
           f"and every further weight update would add more until the NPU is full. When a frozen parameter changes, "
           f"drop (or release) the programs that froze it (README.md, 'Weights: upload once').")
    steady = compiled.call(example.inputs((7, 4), seed=7), what=f"{compiled.what((7, 4))}, called once more")
    expect_eager(steady)
    expect(steady.stats.constant_bytes_to_device == 0 and steady.stats.programs_compiled == 0,
           f"{steady.what} compiled {steady.stats.programs_compiled} program(s) and uploaded "
           f"{steady.stats.constant_bytes_to_device} B of constants, although no weight changed since the previous "
           f"call.\n{steady.npu_line}")


@CHECKS.check(stage="weights", weight=2)
def replaced_parameter_data_is_uploaded_again(ctx):
    "a parameter whose memory is replaced (`p.data = other`, same identity and version) is uploaded again"
    example = zoo("mlp")
    compiled = Compiled(attempt(ctx), example)
    expect_eager(compiled.call())
    weight = probes.build(example.recipe).get_parameter("fc1.weight").detach()
    compiled.stash_tensors([weight * -0.5, weight * 2.0])
    # 0 -> 1 -> 0: one of the two swaps moves to a higher address and the other to a lower one, so only a
    # comparison of data_ptr() for equality catches both
    for index in (0, 1, 0):
        compiled.use_stashed_data("fc1.weight", index)
        what = (f"{compiled.what()}, called after `model.fc1.weight.data = other_tensor` (the parameter is the same "
                f"object, its _version unchanged; only its memory differs)")
        seen = compiled.call(what=what)
        expect_eager(seen, after=" with the new weight", advice=(
            "`p.data = other` keeps the parameter's identity and its `_version`; `p.data_ptr()` is what changes. "
            "Remember it with the version and compile again when it differs (README.md, 'Weights: upload once')."))
        expect_no_fallback(seen)
        expect(seen.stats.runs == 1, f"{what} ran {seen.stats.runs} NPU programs; the call should still run on the "
                                     f"NPU, as one program with the new weight.\n{seen.npu_line}")


# --- stage: fallback ------------------------------------------------------------------------------------------

@CHECKS.check(stage="fallback", weight=2)
def float64_falls_back_loudly(ctx):
    "a float64 model gives eager's answer on the CPU, with an NPUFallbackWarning saying why"
    example = Example("mlp_float64", recipe(zoo="mlp", dtype="float64"), (2, 4), "the `mlp` zoo model in float64")
    seen = run_attempt(ctx, example)
    expect_eager(seen)
    expect(seen.stats.runs == 0, f"internal: the NPU ran a float64 program\n{seen.npu_line}")
    expect_fallback_warning(seen, ("float64", "dtype"), must_name=(2, 4))
    # a second batch size makes Dynamo recompile with a symbolic batch: the partitions then also take sizes (ints)
    example = Example("mlp_3d_float64", recipe(zoo="mlp", dtype="float64"), (2, 5, 4),
                      "the `mlp` zoo model in float64, on 3-D inputs")
    compiled = Compiled(attempt(ctx), example)
    for batch in (2, 3):
        seen = compiled.call(example.inputs((batch, 5, 4), seed=batch))
        expect_eager(seen)
        expect_fallback_warning(seen, ("float64", "dtype"), must_name=(batch, 5, 4))
    again = compiled.call(example.inputs((3, 5, 4), seed=4))
    expect_eager(again)
    expect(not again.stats.compile_errors and not again.stats.programs_compiled,
           f"{again.what}, called a second time after the NPU refused its float64 graph, asked NPU.compile again "
           f"({again.stats.summary()}). A refusal of the graph itself (a dtype, an op) will not change: remember the "
           f"signature and run it on the CPU without asking again (README.md, 'Falling back').")


@CHECKS.check(stage="fallback", weight=3)
def injected_fault_reruns_that_call_on_cpu(ctx):
    "a device fault: that call reruns on the CPU with a warning, the next call uses the NPU again"
    for example in (zoo("mlp"), zoo("renamed")):
        compiled = Compiled(attempt(ctx), example)
        first = compiled.call()
        expect_eager(first)
        per_call = first.stats.runs
        for fault in (1, 2):  # every fault of the same partition warns, and none costs a program
            what = f"calling {compiled.what()} again after DEVICE.inject_fault(1)" + (
                f" (the {'second' if fault == 2 else 'first'} fault of this partition)")
            faulted = compiled.call(faults=1, what=what)
            expect_eager(faulted)
            expect(len(faulted.stats.runtime_errors) == 1,
                   f"internal: expected one runtime error, got {faulted.stats.summary()}")
            expect(faulted.fallbacks or fault == 1,
                   f"{what} gave eager's answer on the CPU but no NPUFallbackWarning; the first fault warned. Every "
                   f"fallback warns, each time: a user counting warnings learns how many calls left the NPU "
                   f"(README.md, 'Falling back').\n{faulted.npu_line}")
            expect_fallback_warning(faulted, ("fault",))
            if per_call > 1:
                expect(faulted.stats.runs == per_call - 1,
                       f"{what}: the fault hit one of the {per_call} NPU programs, and {faulted.stats.runs} of the "
                       f"others ran on the NPU in that call (expected {per_call - 1}). Fall back per partition: only "
                       f"the program that failed reruns on the CPU.\nNPU: {faulted.stats.summary()}")
            after = compiled.call(what=f"the call after {what}")
            expect_eager(after)
            expect(after.stats.runs == per_call and not after.fallbacks,
                   f"the call after the faulted one ran {after.stats.runs} NPU program(s) (expected {per_call}, as "
                   f"before the fault) and warned {after.fallbacks}.\nNPU: {after.stats.summary()}\nA fault affects "
                   f"one call: later calls must use the NPU again, not stay on the CPU for good.")
            expect(after.stats.programs_compiled == 0 and after.stats.constant_bytes_to_device == 0,
                   f"the call after the faulted one compiled {after.stats.programs_compiled} program(s) and uploaded "
                   f"{after.stats.constant_bytes_to_device} B of constants again.\nNPU: {after.stats.summary()}\n"
                   f"The program that faulted is as good as before: a fault is the device's, for that one run. Keep "
                   f"the program and run it again on the next call; a signature seen before compiles nothing "
                   f"(README.md, 'Falling back' and 'New shapes').")


# --- stage: autograd ------------------------------------------------------------------------------------------

def expect_same(got: Any, want: Any, what: str) -> None:
    try:
        torch.testing.assert_close(got, want)
    except AssertionError as error:
        raise CheckFailed(f"{what}:\n{error}") from None


@CHECKS.check(stage="autograd", weight=2)
def gradients_match_eager(ctx):
    "under autograd, outputs and gradients match eager"
    for example in (zoo("residual"), SANDWICH):
        backend = attempt(ctx)
        session = backend.probe(probes.compile_model, example.recipe)
        reset_device(release=True)
        (x,) = example.inputs()
        got = backend.probe(probes.gradients, session, (x,))
        what = f"torch.compile({example.what()}, backend=your npu_backend) under autograd"
        expect(got.error is None, f"{what} raised NPURuntimeError: {got.error}")
        expect(got.output_requires_grad,
               f"{what} returned an output that does not require grad: gradients cannot flow back to the "
               f"parameters. Let aot_autograd handle training graphs: they run on the NPU too, with the parameters as "
               f"program inputs (README.md, 'Autograd').")
        eager, x_eager = probes.build(example.recipe), x.clone().requires_grad_()
        out = eager(x_eager)
        out.sum().backward()
        expect_same(got.output, out.detach(), f"{what}: output differs")
        expect_same(got.input_grad, x_eager.grad, f"{what}: input gradient differs")
        for name, p in eager.named_parameters():
            expect_same(got.param_grads.get(name), p.grad, f"{what}: gradient of {name} differs")


@CHECKS.check(stage="autograd", weight=2)
def training_steps_match_eager(ctx):
    "three SGD steps through the compiled model match eager, and the steps after the first compile nothing"
    example = zoo("residual")
    backend = attempt(ctx)
    session = backend.probe(probes.compile_model, example.recipe)
    reset_device(release=True)
    eager = probes.build(example.recipe)
    optimizer = torch.optim.SGD(eager.parameters(), lr=0.1)
    (x,) = example.inputs()
    what = f"training torch.compile({example.what()}, backend=your npu_backend) with torch.optim.SGD(lr=0.1)"
    for step in range(3):
        reset_device()
        got = backend.probe(probes.train_step, session, (x,), 0.1)
        stats = device_stats()
        expect(got.error is None, f"{what}: step {step + 1} raised NPURuntimeError: {got.error}")
        optimizer.zero_grad()
        loss = eager(x).square().mean()
        loss.backward()
        optimizer.step()
        expect_same(got.loss, loss.detach(),
                    f"{what}: the loss of step {step + 1} differs from eager's. If step 1 matched, the forward ran "
                    f"with weights from before the optimizer step: parameters frozen into a program go stale when "
                    f"the optimizer updates them in place. Freeze only in inference (README.md, 'Weights: upload "
                    f"once')")
        expect(stats.runs >= 1, f"{what}: step {step + 1} ran nothing on the NPU.\nNPU: {stats.summary()}")
        expect(step == 0 or stats.programs_compiled == 0,
               f"{what}: step {step + 1} compiled {stats.programs_compiled} NPU program(s), though nothing about the "
               f"graph or its shapes changed since step 1.\nNPU: {stats.summary()}\nIn training the optimizer changes "
               f"every parameter in place after each step: parameters frozen into programs are stale every step, "
               f"and recompiling them each step costs more than sending them. Under autograd, keep parameters as "
               f"program inputs; freeze only in inference (README.md, 'Weights: upload once').")
    params = backend.probe(probes.parameters, session)
    for name, p in eager.named_parameters():
        expect_same(params[name], p.detach(), f"{what}: after 3 steps, {name} differs from eager training")


# --- stage: fuzz ------------------------------------------------------------------------------------------------

@CHECKS.check(stage="fuzz", weight=4)
def random_mlps_with_cpu_ops(ctx):
    "random MLPs with CPU-only ops mid-graph: eager's answer, supported ops on the NPU, counts like the reference"
    strategy = mlp_specs(activations=NPU_FRIENDLY_ACTIVATIONS + CPU_ONLY_ACTIVATIONS, styles=("modules", "functional"))

    def prop(spec):
        example = mlp_example(spec)
        compiled = Compiled(attempt(ctx), example)
        seen = compiled.call()
        expect_eager(seen)
        expect_no_fallback(seen)
        expect_supported_ops_on_npu(compiled, seen)
        expect_counts_like_reference(ctx, seen, example)

    fuzz(ctx, strategy, prop, describe=describe, max_examples=max(6, ctx.max_examples // 2))


# --- stage: weights and program memory together ---------------------------------------------------------------

def workload_example(workload: tuple) -> Example:
    _, kind, requires_grad, dtype, _ = workload
    return zoo("mlp" if kind == "batch" else "mlp_3d", dtype, requires_grad=requires_grad)


def describe_workload(workload: tuple) -> str:
    """A workload as a person reads it: the model, then every call's input shape and every weight change in order."""
    _, kind, requires_grad, dtype, events = workload
    steps = [f"{(*event[1], 4)}" + (" with a device fault" if event[2] else "") if event[0] == "call"
             else f"model.{event[1]}.mul_({event[2]})" for event in events]
    model = "mlp" if kind == "batch" else "mlp_3d"
    return (f"`{model}` in {dtype}, parameters requires_grad={requires_grad}, called under torch.no_grad() with: "
            + ", ".join(steps))


def run_workload(ctx: Context, workload: tuple) -> None:
    """Play `workload` (strategies.npu_workloads) on the attempt, on an NPU of NPU_WORKLOAD_SLOTS slots, and judge
    every call by the lesson's rules.

    What a correct backend holds, as the lesson states it: Dynamo's first graph serves the first call only and keeps
    its one program until it is the one used longest ago (that partition is never called again, so it never learns
    that a weight changed); the second graph serves every later call, keeps one program per signature, and on the
    first call after a weight change releases them all. A new signature compiles; on a full device the program used
    longest ago is released first. Every call runs on the NPU; a faulted run reruns on the CPU, warned."""
    events = workload[4]
    example = workload_example(workload)
    with small_npu(NPU_WORKLOAD_SLOTS):
        compiled = Compiled(attempt(ctx), example)
        lru = LeastRecentlyUsed(NPU_WORKLOAD_SLOTS)
        stale = False  # a parameter changed since the second graph was last called
        story: list[str] = []
        for step, event in enumerate(events, 1):
            if event[0] == "scale":
                _, name, factor = event
                compiled.scale_parameter(name, factor)
                story.append(f"model.{name}.mul_({factor})")
                stale = True
                continue
            _, dims, fault = event
            shape = (*dims, 4)
            graph = "first" if step == 1 else "second"
            dropped = lru.drop("second") if stale and graph == "second" else 0
            stale = stale and graph != "second"
            want_compiled, want_released = lru.use((graph, shape))
            so_far = ", ".join(story[-6:]) or "nothing"
            what = (f"{compiled.what(shape)}, call {step} of the workload on an NPU of {NPU_WORKLOAD_SLOTS} program "
                    f"slots (the steps before it, last 6: {so_far})" + (", with DEVICE.inject_fault(1)" if fault else ""))
            story.append(f"{shape}")
            seen = compiled.call(example.inputs(shape, seed=step), faults=int(fault), what=what)
            expect_eager(seen, after=" (after the weight changes of this workload)" if "mul_" in so_far else "")
            expect_not_left_to_dynamo(seen, compiled.backend)
            got = seen.stats
            if fault:
                expect(len(got.runtime_errors) == 1,
                       f"{what}: the device faulted on this call's run; expected that one failed run, got "
                       f"{len(got.runtime_errors)}.\n{seen.npu_line}\nKeep the program: a fault affects one call "
                       f"(README.md, 'Falling back').")
                expect_fallback_warning(seen, ("fault",))
            else:
                if got.runs == 0:
                    raise CheckFailed(
                        f"{what}: the NPU ran nothing, and your backend warned {seen.fallbacks[:1] or 'nothing'}.\n"
                        f"{seen.npu_line}\nEvery call of this workload fits on the NPU: when memory is full, release "
                        f"the program your backend used longest ago and compile this one (README.md, 'When program "
                        f"memory is full').")
                expect_no_fallback(seen)
            if want_compiled == 0 and not fault:
                (x,) = example.inputs(shape)
                expect(got.input_bytes_to_device == x.numel() * x.element_size() and got.constant_bytes_to_device == 0,
                       f"{what} sent {got.input_bytes_to_device} B of program inputs and {got.constant_bytes_to_device} "
                       f"B of constants; the input is {x.numel() * x.element_size()} B.\n{seen.npu_line}\nIn inference "
                       f"the parameters are frozen into the program; the parameters are the arguments that are "
                       f"nn.Parameters, whether or not they require grad (README.md, 'Weights: upload once').")
            history = ", ".join(story[-8:])
            if dropped:
                history += f" (the first call of the second graph since a weight change: its {dropped} stale " \
                           f"program(s) go)"
            expect_least_recently_used(seen, compiled.backend, lru, want_compiled, want_released + dropped,
                                       history=history)


@CHECKS.check(stage="weights", weight=3)
def weight_changes_while_program_memory_fills(ctx):
    "weight changes between new shapes past a full memory: every call on the NPU, programs released least recently used first"
    strategy = npu_workloads(overflow=(2, 3) if ctx.deep else (2,))
    fuzz(ctx, strategy, lambda workload: run_workload(ctx, workload), describe=describe_workload,
         max_examples=4 if ctx.deep else 1)


# --- stage: real models ------------------------------------------------------------------------------------------
# Tiny transformers and CNNs from `transformers` (katas/common/real_models.py): 5-25 partitions per graph, int64
# position ids, attention between NPU islands. Four input shapes, then the first again: with 19 partitions a shape,
# the programs of five signatures and two Dynamo graphs do not all fit in 64 slots, so a backend that never
# releases a program leaves the NPU idle from the fourth shape on.

REAL_SHAPES = {
    "bert": ((2, 8), (3, 12), (4, 16), (2, 5)),
    "gpt2": ((2, 8), (3, 12), (4, 16), (2, 5)),
    "llama": ((2, 8), (3, 12), (4, 16), (2, 5)),
    "vit": ((2, 3, 32, 32), (3, 3, 32, 32), (4, 3, 32, 32), (5, 3, 32, 32)),
    "resnet": ((2, 3, 32, 32), (3, 3, 40, 40), (4, 3, 48, 48), (2, 3, 36, 36)),
}
REAL_LEARNER = ("bert",)
REAL_DEEP = ("bert", "gpt2")


@dataclass(frozen=True)
class RealExample(Example):
    """A model of katas/common/real_models.py: token ids for the text models, images for the vision ones."""

    def inputs(self, shape: tuple[int, ...] | None = None, seed: int = 1) -> tuple[torch.Tensor, ...]:
        from katas.common.real_models import REAL_MODELS

        entry = REAL_MODELS[self.name]
        generator = torch.Generator().manual_seed(seed)
        shape = shape or self.shape
        if entry.family == "text":
            return (torch.randint(0, 128, shape, generator=generator),)
        return (torch.randn(shape, generator=generator),)


def real_example(name: str) -> RealExample:
    from katas.common.real_models import REAL_MODELS

    entry = REAL_MODELS[name]
    return RealExample(name, recipe(real=name), REAL_SHAPES[name][0], f"transformers' {name}: {entry.shows}")


def compute_ops(ops: dict[str, int]) -> Counter:
    """Compute ops by canonical name, layout ops aside; a fused linear_gelu stands for two (its Linear and GELU)."""
    return Counter({op: n * (2 if op == "linear_gelu" else 1) for op, n in ops.items() if op not in LAYOUT_OPS})


_SUPPORTED: dict[str, Counter] = {}


def supported_compute_ops(ctx: Context, example: RealExample) -> Counter:
    """The compute ops of the model's ATen graph that the NPU runs: kata 4's table, float work only (the
    reference's support), layout ops aside. Counted on an aot_autograd capture made here, not the attempt's, at the
    model's first shape: measured, every shape of REAL_SHAPES gives the same counts (a capture costs seconds)."""
    key = example.name
    if key not in _SUPPORTED:
        from katas.common.capture import capture

        gm = capture(probes.build(example.recipe), example.inputs(), "aot_autograd").gm
        support, submodules = ctx.reference.NPUFloatSupport(), dict(gm.named_modules())
        ops = Counter(canonical(str(n.target)) for n in gm.graph.nodes if support.is_node_supported(submodules, n))
        _SUPPORTED[key] = compute_ops(ops)
    return _SUPPORTED[key]


def share_text(ran: Counter, supported: Counter) -> str:
    fused = ran.get("linear_gelu", 0) // 2
    return (f"{sum(ran.values())} of {sum(supported.values())} supported compute ops ran on the NPU (a fused "
            f"linear_gelu counts as two). The NPU ran {ops_text(dict(ran))}; the graph has {ops_text(dict(supported))}"
            + (f", of which {fused} GELU(s) and the Linear before each were fused" if fused else ""))


def play_real_model(ctx: Context, example: RealExample) -> None:
    compiled = Compiled(attempt(ctx), example)
    calls = (*REAL_SHAPES[example.name], REAL_SHAPES[example.name][0])
    for i, shape in enumerate(calls, 1):
        label = "its first shape again" if i == len(calls) else ("its first shape" if i == 1 else f"a new shape")
        seen = compiled.call(example.inputs(shape, seed=i),
                             what=f"{compiled.what(shape)}, call {i} of {len(calls)} ({label})")
        expect_eager(seen)
        supported = supported_compute_ops(ctx, example)
        ran = compute_ops(seen.stats.ops_run)
        expect(sum(ran.values()) >= sum(supported.values()),
               f"{seen.what}: {share_text(ran, supported)}.\n{seen.npu_line}\n"
               + ("Your backend warned: " + seen.fallbacks[0][:300] + "\n" if seen.fallbacks else "")
               + ("The NPU share fell after the first shape: program memory filled up with programs of earlier "
                  "shapes and of the graph Dynamo no longer calls. Release the program your backend used longest "
                  "ago when NPU.compile says memory is full (README.md, 'When program memory is full')."
                  if i > 1 else
                  "Every op in NPU_OPS that computes on floats runs on the NPU. An int64 op (position ids) in a "
                  "partition makes NPU.compile refuse the whole partition: keep integer work on the CPU "
                  "(README.md, 'The pipeline', step 3)."))


@CHECKS.check(stage="real_models", weight=3)
def real_models_keep_the_npu_busy_at_every_shape(ctx):
    "transformers models (BERT; more in the deep profile) run every supported float op on the NPU, at every shape"
    for name in REAL_DEEP if ctx.deep else REAL_LEARNER:
        play_real_model(ctx, real_example(name))
