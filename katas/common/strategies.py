"""The one home of the katas' Hypothesis strategies.

Hidden checks draw random models from here, so every kata fuzzes the same family of MLPs and a
counterexample reads the same way everywhere (see `katas.common.models.describe`).
"""
from __future__ import annotations

from hypothesis import strategies as st

from katas.common.models import NPU_FRIENDLY_ACTIVATIONS, REUSES, LayerSpec, MLPSpec

WIDTHS = st.integers(min_value=1, max_value=6)


def layer_specs(activations=NPU_FRIENDLY_ACTIVATIONS, reuses=REUSES) -> st.SearchStrategy[LayerSpec]:
    """One Linear layer and what follows it. Shrinks toward width 1, bias, the first activation, no reuse."""
    return st.builds(
        LayerSpec,
        out_features=WIDTHS,
        bias=st.booleans().map(lambda b: not b),  # shrinks to True: a bias is the common case
        activation=st.sampled_from(activations),
        reuse=st.sampled_from(reuses),
    )


def mlp_specs(
    *,
    activations=NPU_FRIENDLY_ACTIVATIONS,
    reuses=REUSES,
    max_layers: int = 3,
    batch_shapes=((2,), (2, 3)),
    dtypes=("float32",),
    styles=("modules",),
) -> st.SearchStrategy[MLPSpec]:
    """Random MLPs: 1..max_layers Linear layers, each followed by an activation and maybe reused."""
    return st.builds(
        MLPSpec,
        in_features=WIDTHS,
        layers=st.lists(layer_specs(activations, reuses), min_size=1, max_size=max_layers).map(tuple),
        batch_shape=st.sampled_from(batch_shapes),
        dtype=st.sampled_from(dtypes),
        style=st.sampled_from(styles),
        seed=st.integers(min_value=0, max_value=2**16),
    )


def dialect_captures(captures) -> st.SearchStrategy[str]:
    """A capture method name from `captures` (see `katas.common.capture.CAPTURES`)."""
    return st.sampled_from(tuple(captures))


def float_tensors(shape, *, scales=(1.0, 1e-2, 10.0)) -> st.SearchStrategy:
    """float32 tensors of `shape` (a tuple, or a strategy of tuples) with elements in [-1, 1] times one
    scale drawn from `scales`. Small scales give small norms and large ones large norms, so code that
    branches on the magnitude of a tensor sees both sides. Shrinks toward zeros and the first scale."""
    import torch

    shapes = shape if isinstance(shape, st.SearchStrategy) else st.just(tuple(shape))

    def of_shape(dims: tuple[int, ...]) -> st.SearchStrategy:
        count = 1
        for d in dims:
            count *= d
        values = st.lists(st.floats(min_value=-1.0, max_value=1.0, width=32), min_size=count, max_size=count)
        return st.tuples(values, st.sampled_from(scales)).map(
            lambda vs: torch.tensor(vs[0], dtype=torch.float32).reshape(dims) * vs[1])

    return shapes.flatmap(of_shape)


def capture_plans(captures, wrappings=("plain",)) -> st.SearchStrategy[tuple[str, str, bool]]:
    """(capture method, wrapping, dynamic) triples that can be captured: symbolic_trace cannot trace torch.cond,
    and only `capture.DYNAMIC_CAPTURES` keep the batch size symbolic. Shrinks toward the first capture, the
    first wrapping, static shapes."""
    from katas.common.capture import DYNAMIC_CAPTURES

    def plans_for(method: str) -> st.SearchStrategy[tuple[str, str, bool]]:
        usable = tuple(w for w in wrappings if not (method == "symbolic_trace" and w == "cond")) or ("plain",)
        dynamic = st.booleans() if method in DYNAMIC_CAPTURES else st.just(False)
        return st.tuples(st.just(method), st.sampled_from(usable), dynamic)

    return st.sampled_from(tuple(captures)).flatmap(plans_for)


def linear_gelu_calls() -> st.SearchStrategy[dict]:
    """One call of a fused linear+GELU op, as plain data (kata 7's `OpCase` fields): x of shape (*lead, in) with
    0 to 3 leading dimensions (a zero-size batch among them), weight (out, in), a bias or None, both GELU forms,
    float32 or float64, x with or without requires_grad. Shrinks toward a 2-D float32 call with a bias."""
    leads = st.sampled_from(((2,), (), (1,), (3, 2), (2, 1, 3), (0, 2)))
    return st.fixed_dictionaries({
        "lead": leads,
        "in_features": WIDTHS,
        "out_features": WIDTHS,
        "bias": st.booleans().map(lambda b: not b),
        "approximate": st.sampled_from(("none", "tanh")),
        "dtype": st.sampled_from(("float32", "float64")),
        "seed": st.integers(min_value=0, max_value=2**16),
        "x_requires_grad": st.booleans().map(lambda b: not b),
    })


# --- kata 2: graph breaks ------------------------------------------------------------------------------------

def suspect_shapes(*, min_dims: int = 1, max_dims: int = 3, max_side: int = 4,
                   min_numel: int = 1) -> st.SearchStrategy[tuple[int, ...]]:
    """Tensor shapes of min_dims..max_dims dimensions, each of size 1..max_side, with at least `min_numel`
    elements: kata 2's suspects take x of any such shape (a fix written for a vector must still count, average
    and normalise over every element of a matrix). Shrinks toward one dimension of the smallest size allowed."""
    shapes = st.lists(st.integers(min_value=1, max_value=max_side), min_size=min_dims, max_size=max_dims).map(tuple)

    def numel(shape: tuple[int, ...]) -> int:
        count = 1
        for d in shape:
            count *= d
        return count

    return shapes.filter(lambda shape: numel(shape) >= min_numel)


def logger_tweaks() -> st.SearchStrategy[dict]:
    """What a user may have set on one logger before calling kata 2's finder, as plain data: a level (None: left
    as it was), a propagate flag (None: left), `disabled`, and a handler and a filter of their own. Shrinks toward
    nothing changed."""
    return st.fixed_dictionaries({
        "level": st.sampled_from((None, 0, 10, 20, 30, 40)),
        "propagate": st.sampled_from((None, False, True)),
        "disabled": st.booleans(),
        "handler": st.booleans(),
        "filter": st.booleans(),
    })


def user_logging_settings() -> st.SearchStrategy[dict]:
    """A user's logging state before kata 2's finder runs, as plain data: what they switched on with
    torch._logging.set_logs, their tweaks (see `logger_tweaks`) on each logger a finder may touch (the
    graph-break artifact loggers, `torch.__trace`, the `.item()` hint logger `torch._dynamo.variables.tensor`,
    their parent `torch._dynamo`) and whether they had a warnings filter of their own. Shrinks toward torch's
    defaults."""
    return st.fixed_dictionaries({
        "set_logs": st.sampled_from(({}, {"graph_breaks": True}, {"graph_breaks": True, "recompiles": True},
                                     {"recompiles": True})),
        "loggers": st.fixed_dictionaries({role: logger_tweaks() for role in ("graph_breaks", "trace", "hint",
                                                                              "dynamo")}),
        "warnings_filter": st.booleans(),
    })


def hiding_logging_settings() -> st.SearchStrategy[dict]:
    """A user's logging state (as `user_logging_settings` gives it) that would hide the graph-break reports from a
    finder that does not get past it, each kind as an axis: on the graph-break loggers a filter of theirs that
    drops every record ("drop_filter": "first" or "last" among their filters), `disabled`, or a level above DEBUG;
    or the graph-break loggers at NOTSET under a parent (`torch._dynamo`) at WARNING or above. At least one of
    them; the other tweaks as `user_logging_settings` draws them. Shrinks toward one kind of hiding."""
    return _hiding_logging_settings()


@st.composite
def _hiding_logging_settings(draw) -> dict:
    settings = draw(user_logging_settings())
    hide = draw(st.sets(st.sampled_from(("drop_filter", "disabled", "level", "parent_level")), min_size=1,
                        max_size=4))
    loggers = {role: dict(tweaks) for role, tweaks in settings["loggers"].items()}
    graph_breaks = loggers["graph_breaks"]
    graph_breaks["drop_filter"] = draw(st.sampled_from(("first", "last"))) if "drop_filter" in hide else None
    graph_breaks["disabled"] = graph_breaks["disabled"] or "disabled" in hide
    if "level" in hide:
        graph_breaks["level"] = draw(st.sampled_from((20, 30, 40, 50)))
    elif "parent_level" in hide:
        graph_breaks["level"] = 0
    if "parent_level" in hide:
        loggers["dynamo"]["level"] = draw(st.sampled_from((30, 40, 50)))
    return {**settings, "loggers": loggers}


# --- kata 9: int8 quantization ------------------------------------------------------------------------------

INT8_PROGRAM_OPS = ("linear", "relu", "add", "gelu", "add_scalar", "add_alpha")
INT8_PROGRAM_INPLACE_OPS = ("relu", "add")  # steps whose last field asks for the in-place form (relu_, add_)


def int8_programs(*, max_inputs: int = 2, max_steps: int = 5) -> st.SearchStrategy[tuple]:
    """Small dataflow models for kata 9, as plain hashable data: ("program", inputs, width, steps, extra, seed).

    Values 0..inputs-1 are the model's inputs (each (batch, width)); step k makes value inputs + k from earlier
    values: ("linear", src, bias), ("relu", src, in_place), ("gelu", src), ("add", a, b, in_place) (b is a about
    half the time: `z + z`), ("add_scalar", src) (`h + 0.5`), ("add_alpha", a, b) (`torch.add(a, b, alpha=-0.5)`).
    The model returns every value no step reads, and `extra` too when it is not None (a value also returned).
    In-place forms apply only where they change nothing (kata 9's probes.program_plan). Shrinks toward one
    input, width 1, one Linear with a bias."""
    return _int8_program(max_inputs, max_steps)


@st.composite
def _int8_program(draw, max_inputs: int, max_steps: int) -> tuple:
    inputs = draw(st.integers(min_value=1, max_value=max_inputs))
    width = draw(WIDTHS)
    count = draw(st.integers(min_value=1, max_value=max_steps))
    steps = []
    for k in range(count):
        value = st.integers(min_value=0, max_value=inputs + k - 1)
        kind = draw(st.sampled_from(INT8_PROGRAM_OPS))
        first = draw(value)
        if kind == "linear":
            steps.append(("linear", first, draw(st.booleans().map(lambda b: not b))))
        elif kind == "relu":
            steps.append(("relu", first, draw(st.booleans())))
        elif kind in ("gelu", "add_scalar"):
            steps.append((kind, first))
        elif kind == "add":
            steps.append(("add", first, draw(st.one_of(st.just(first), value)), draw(st.booleans())))
        else:
            steps.append(("add_alpha", first, draw(value)))
    extra = draw(st.one_of(st.none(), st.integers(min_value=inputs, max_value=inputs + count - 1)))
    return ("program", inputs, width, tuple(steps), extra, draw(st.integers(min_value=0, max_value=2**16)))


SQNR_DTYPES = ("float32", "float16", "bfloat16", "float64")


def sqnr_pairs() -> st.SearchStrategy[tuple]:
    """(reference, actual) tensor pairs of one shape and one float dtype (SQNR_DTYPES), for kata 9's sqnr: values
    up to 1000 (a float16 square overflows past 256), actual = reference plus noise 0, a millionth (near-equal: what
    torch.allclose calls equal), a hundredth or as large as the signal, rounded to the dtype. Shrinks toward
    float32, no noise."""
    import torch

    def build(drawn) -> tuple:
        values, noise_values, scale, noise, dtype = drawn
        reference = torch.tensor(values, dtype=torch.float64) * scale
        if not bool(reference.any()):
            reference[0] = scale  # a reference with no signal at all has no SQNR worth stating
        actual = reference + torch.tensor(noise_values, dtype=torch.float64) * scale * noise
        return reference.to(getattr(torch, dtype)), actual.to(getattr(torch, dtype))

    def of_size(n: int) -> st.SearchStrategy:
        unit = st.lists(st.floats(min_value=-1.0, max_value=1.0, width=32), min_size=n, max_size=n)
        return st.tuples(unit, unit, st.sampled_from((1.0, 300.0, 1000.0, 1e-3)),
                         st.sampled_from((0.0, 1e-6, 1e-2, 1.0)), st.sampled_from(SQNR_DTYPES))

    return st.integers(min_value=1, max_value=16).flatmap(of_size).map(build)


# --- kata 1: graph dialects ---------------------------------------------------------------------------------

DIALECT_PROGRAM_LEAVES = ("core", "linear", "custom")
DIALECT_PROGRAM_HOPS = ("cond", "map", "no_grad", "autocast", "wrap")


def dialect_program_bodies(hops=DIALECT_PROGRAM_HOPS, max_depth: int = 3,
                           leaves=DIALECT_PROGRAM_LEAVES) -> st.SearchStrategy[tuple]:
    """Kata 1's program bodies, as plain hashable trees (katas/01_dialects/hidden/programs.py builds them): leaves
    ("core",) relu(h) * 2, ("linear",) a Linear, ("custom",) kata::linear_gelu; ("seq", a, b); and higher-order
    ops from `hops` nesting up to `max_depth` deep: ("cond", true_body, false_body) with branches drawn apart (so
    one branch may hold another level than the other), ("map", body), ("no_grad", body), ("autocast", body),
    ("wrap", body). `leaves` may add leaf kinds (kata 1 adds ("chunk",), a call whose value is a tuple of tensors)
    and `hops` other higher-order ops (("scan", body)); any HOP but cond takes one body. Shrinks toward one core
    leaf, then shallower trees."""
    leaf_kinds = leaves
    leaves = st.sampled_from(tuple(leaf_kinds)).map(lambda kind: (kind,))

    def deeper(depth: int) -> st.SearchStrategy[tuple]:
        if depth == 0 or not hops:
            return leaves
        inner = deeper(depth - 1)
        options = [leaves, st.tuples(st.just("seq"), inner, inner)]
        for hop in hops:
            if hop == "cond":
                options.append(st.tuples(st.just("cond"), inner, inner))
            else:
                options.append(st.tuples(st.just(hop), inner))
        return st.one_of(*options)

    return deeper(max_depth)


def dialect_programs(captures, *, dynamic_captures=(), hops_for=None, sizes=("none", "int", "float", "bool"),
                     edits=("none", "dead_subgraphs", "partitioned"), max_depth: int = 3,
                     leaves=DIALECT_PROGRAM_LEAVES) -> st.SearchStrategy[tuple]:
    """("program", body, sizes, method, dynamic, edit) for kata 1's differential fuzz: a body
    (`dialect_program_bodies`, with the higher-order ops `hops_for[method]` allows), the size arithmetic multiplied
    into the result ("int" sym_max(b * 2, 2), "float" sym_float(b) / 2, "bool" b > 1; b = x.shape[0]: SymInt,
    SymFloat, SymBool with a symbolic batch, plain numbers in static captures that record them), a capture
    from `captures`, a symbolic batch size where `dynamic_captures` allow it, and how a pass then edits the graph
    (`edits`); `leaves` as in `dialect_program_bodies`. Shrinks toward a core leaf, no sizes, the first capture,
    static shapes, no edit."""

    def for_method(method: str) -> st.SearchStrategy[tuple]:
        hops = tuple((hops_for or {}).get(method, DIALECT_PROGRAM_HOPS))
        dynamic = st.booleans() if method in dynamic_captures else st.just(False)
        return st.tuples(st.just("program"), dialect_program_bodies(hops, max_depth, leaves), st.sampled_from(sizes),
                         st.just(method), dynamic, st.sampled_from(edits))

    return st.sampled_from(tuple(captures)).flatmap(for_method)


# --- kata 7: custom ops ---------------------------------------------------------------------------------------

LINEAR_GELU_DTYPES = ("float32", "float64", "float16", "bfloat16")  # the NPU's dtypes: forward and backward
LINEAR_GELU_DEVICES = ("cpu", "meta")  # meta: a device whose tensors have no data, as a fake kernel's inputs may


def linear_gelu_calls_any_dtype() -> st.SearchStrategy[dict]:
    """`linear_gelu_calls` with every dtype the NPU runs (LINEAR_GELU_DTYPES: float32, float64, float16, bfloat16).
    Kata 7's fake-kernel probe runs each call on every device of LINEAR_GELU_DEVICES. Shrinks toward float32."""
    return st.tuples(linear_gelu_calls(), st.sampled_from(LINEAR_GELU_DTYPES)).map(
        lambda drawn: {**drawn[0], "dtype": drawn[1]})


# how x is laid out in memory (kata 7's OpCase.x_layout): contiguous, or its two first dimensions swapped by a
# transpose (a (1, 0) stride order: flattening the leading dimensions then needs reshape, not view)
LINEAR_GELU_X_LAYOUTS = ("contiguous", "transposed")


def linear_gelu_calls_any_layout() -> st.SearchStrategy[dict]:
    """`linear_gelu_calls_any_dtype` with x contiguous or transposed (LINEAR_GELU_X_LAYOUTS): an op accepts any
    strides, as F.linear does. Shrinks toward a contiguous x."""
    return st.tuples(linear_gelu_calls_any_dtype(), st.sampled_from(LINEAR_GELU_X_LAYOUTS)).map(
        lambda drawn: {**drawn[0], "x_layout": drawn[1]})


def linear_gelu_call_pairs() -> st.SearchStrategy[tuple[dict, dict]]:
    """Two calls of the fused op made before one backward (two layers of a model): the second differs from the
    first in approximate and in having a bias, so a backward that reads state left by the last forward call
    instead of its own gets the first call's gradients wrong. Shrinks toward float32 calls."""
    def second(first: dict) -> st.SearchStrategy[dict]:
        return linear_gelu_calls_any_dtype().map(lambda other: {
            **other, "approximate": "tanh" if first["approximate"] == "none" else "none",
            "bias": not first["bias"], "x_requires_grad": True})

    return linear_gelu_calls_any_dtype().flatmap(lambda first: st.tuples(st.just(first), second(first)))


# where the out= variant's `out` lives: a tensor of its own, one slot of a larger buffer (a runtime's arena:
# contiguous, at an offset), or a slice of its columns (not contiguous); kata 7's out= check tries each
OUT_BUFFER_LAYOUTS = ("fresh", "a slot of a larger buffer", "columns of a larger buffer")


GRAD_LAYOUT_GELU_FORMS = ("F.gelu(z)", "nn.GELU()", "nn.GELU('tanh')")
IN_PLACE_WRITES = ("t.mul_(0.5)", "t += 1", "t[0] = 0", "F.relu(t, inplace=True)", "torch.relu_(t)",
                   "torch.mul(t, 0.5, out=t)")


# in-place writes into the other inputs of the pair, and through views (z = F.linear(t, w, b), w and b copies of
# fc's parameters): which input is written (x, weight, bias) and how (directly, through a view)
PAIR_INPUT_WRITES = ("w.mul_(0.5)", "b.add_(1.0)", "t[0].mul_(0.5)", "t.view(-1).add_(1.0)", "w.t().mul_(0.5)",
                     "b[1:].zero_()", "torch.transpose(w, 0, 1).mul_(0.5)")
# steps that write into no input of the pair: a write into another tensor u, and nn.ReLU(), which Dynamo records
# as relu(t, inplace=False)
NOT_PAIR_INPUT_WRITES = ("u.mul_(2.0)", "nn.ReLU()(t)")


def grad_mode_layouts(writes: tuple = IN_PLACE_WRITES, others: tuple = ()) -> st.SearchStrategy[tuple]:
    """Kata 7's rewrite inputs, as plain data: ("layout", steps, gelu form, seed). `steps` is the forward pass in
    program order, each (kind, grad_on): "linear" (z = fc(t)), "gelu" (h = gelu(z)), "reader" (the first reader of
    h), maybe "reader2" (a second reader), maybe "unrelated" (a value computed from x alone) and maybe one in-place
    write to t, the pair's input (a kind of IN_PLACE_WRITES), anywhere. A run of steps with grad off is one
    `with torch.no_grad():` block, so the readers and the unrelated value land before, inside or after blocks, and
    the write before, between or after the pair and its first reader. `writes`: the kinds of write drawn
    (PAIR_INPUT_WRITES adds writes into the weight and bias and through views); `others`: steps that write into no
    input of the pair (NOT_PAIR_INPUT_WRITES), maybe one, anywhere (none by default). Shrinks toward a pair and its
    reader with grad on."""
    return _grad_mode_layout(tuple(writes), tuple(others))


@st.composite
def _grad_mode_layout(draw, writes: tuple = IN_PLACE_WRITES, others: tuple = ()) -> tuple:
    kinds = ["linear", "gelu", "reader"]
    if draw(st.booleans()):
        kinds.append("reader2")
    for extra in ("unrelated", "write") + (("other",) if others else ()):
        if draw(st.booleans()):
            kind = draw(st.sampled_from({"write": writes, "other": others}[extra])) if extra != "unrelated" else extra
            kinds.insert(draw(st.integers(min_value=0, max_value=len(kinds))), kind)
    modes = draw(st.lists(st.booleans().map(lambda b: not b), min_size=len(kinds), max_size=len(kinds)))
    return ("layout", tuple(zip(kinds, modes)), draw(st.sampled_from(GRAD_LAYOUT_GELU_FORMS)),
            draw(st.integers(min_value=0, max_value=2**16)))


# --- kata 5: NPU backend ------------------------------------------------------------------------------------

NPU_WORKLOAD_PARAMETERS = ("fc1.weight", "fc1.bias", "fc2.weight")  # what a weight change edits in place
NPU_WORKLOAD_FACTORS = (-0.5, 2.0, 0.25)
NPU_WORKLOAD_SLOTS = 8  # the small NPU the workloads run on (NPUDevice.max_resident_programs): each overflows it


NPU_INT_ARGUMENT_ELEMENTS = 24  # x of kata 5's `reshape_by_second_input` is (6, 4); len(y) divides it


def npu_int_argument_calls(lengths=(2, 3, 4, 6, 8, 12)) -> st.SearchStrategy[tuple[int, ...]]:
    """Kata 5: the lengths of y in successive calls of `relu(x).reshape(len(y), -1) * 2`, x always (6, 4).

    The first two differ (so Dynamo's second graph, symbolic in len(y), serves every call after the first), and the
    second graph sees at least two lengths: its partition is then called with the same tensor shape and other ints.
    No length is 0 or 1 (Dynamo specialises those). Shrinks toward short sequences of small lengths."""
    return _npu_int_argument_calls(tuple(lengths))


@st.composite
def _npu_int_argument_calls(draw, lengths: tuple) -> tuple[int, ...]:
    first = draw(st.sampled_from(lengths))
    second = draw(st.sampled_from([n for n in lengths if n != first]))
    other = draw(st.sampled_from([n for n in lengths if n != second]))
    rest = draw(st.lists(st.sampled_from(lengths), max_size=3))
    return (first, second, other, *rest)


def npu_workloads(*, slots: int = NPU_WORKLOAD_SLOTS, leading=("batch", "batch and sequence"),
                  dtypes=("float32",), overflow=(2, 3)) -> st.SearchStrategy[tuple]:
    """Kata 5's workloads, as plain data: ("workload", leading, requires_grad, dtype, events), played on an NPU of
    `slots` program slots.

    `leading` is "batch" (the `mlp` zoo model, inputs (b, 4)) or "batch and sequence" (`mlp_3d`, inputs (b, s, 4));
    `requires_grad` is what `model.requires_grad_(...)` set before compiling (every call runs under no_grad);
    events are ("call", leading dims, fault) -- one call of the compiled model, `fault` an injected device fault --
    and ("scale", parameter name, factor), an in-place change of one parameter. The first two calls differ in every
    leading dim, so that Dynamo's second graph is symbolic in all of them and serves every later call. Then: 1 to 3
    new shapes, repeats (some of them faulted), 1 or 2 weight changes, each followed by a repeat of a shape compiled
    before it (the partition drops 2 or more stale programs there) and maybe new shapes; then new shapes until program
    memory is full, `overflow` more new shapes (each releases the program used longest ago), and 2 to 4 calls of
    shapes seen before, drawn so that some were released and some were used since they were compiled (which tells
    least recently used from first compiled), some of them faulted. No size is 0 or 1 (Dynamo specialises those).
    Shrinks toward requires_grad False, the first leading kind, one weight change."""
    return _npu_workload(slots, tuple(leading), tuple(dtypes), tuple(overflow))


@st.composite
def _npu_workload(draw, slots: int, leading: tuple, dtypes: tuple, overflow: tuple) -> tuple:
    kind = draw(st.sampled_from(leading))
    requires_grad = draw(st.booleans())
    dtype = draw(st.sampled_from(dtypes))
    if kind == "batch":
        candidates = [(b,) for b in range(2, 26)]
    else:
        candidates = [(b, s) for b in range(2, 7) for s in range(2, 8)]
    pool = list(draw(st.permutations(candidates)))
    first = pool.pop(0)
    second = next(s for s in pool if all(a != b for a, b in zip(s, first)))
    pool.remove(second)
    events: list[tuple] = [("call", first, False), ("call", second, False)]
    programs = {second}  # shapes the second (symbolic) graph compiled, since the last weight change
    seen = [second]  # shapes of the second graph, in the order they were compiled

    def new_shape() -> None:
        shape = pool.pop(0)
        events.append(("call", shape, False))
        programs.add(shape)
        seen.append(shape)

    def repeat(among: set, *, fault_allowed: bool = True) -> None:
        shape = draw(st.sampled_from(sorted(among)))
        fault = fault_allowed and shape in programs and draw(st.booleans())
        events.append(("call", shape, fault))
        programs.add(shape)

    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        new_shape()
    if draw(st.booleans()):
        repeat(programs | {first})
    for _ in range(draw(st.integers(min_value=1, max_value=2))):
        events.append(("scale", draw(st.sampled_from(NPU_WORKLOAD_PARAMETERS)),
                       draw(st.sampled_from(NPU_WORKLOAD_FACTORS))))
        before, programs = set(programs), set()
        repeat(before, fault_allowed=False)  # the first call after the change: stale programs go, this one compiles
        for _ in range(draw(st.integers(min_value=0, max_value=2))):
            new_shape()
        if draw(st.booleans()):
            repeat(programs)
    while 1 + len(programs) < slots:  # the first graph keeps its one (stale) program until it is the oldest
        new_shape()
    if draw(st.booleans()):
        repeat({seen[-len(programs)]})  # the oldest of the second graph's programs, used again: it must stay
    for _ in range(draw(st.sampled_from(overflow))):
        new_shape()
    oldest_half = set(seen[:max(2, len(seen) // 2)])
    for _ in range(draw(st.integers(min_value=2, max_value=4))):
        repeat(oldest_half | {seen[-1]})
    return ("workload", kind, requires_grad, dtype, tuple(events))


# --- kata 8: export and AOT lowering ------------------------------------------------------------------------
# Plans of kata 8's fuzz models (built by katas/08_export_aot/hidden/probes.py, ProgramModel). Each list starts
# with its most demanding value: Hypothesis tries the first values first and shrinks towards them, so even a run of
# three examples meets every axis at least once.
AOT_PROGRAM_AXES = {
    "inputs": (2, 3, 1),                                  # independent batches: input i has batch b + 2i
    "outputs": (3, 2, 1),                                 # outputs of the first NPU island: Linear(h), z, a
    "batch_at": (1, 0),                                   # where the batch sits after an unsqueeze
    "cast": ("float64", "float16", "none"),               # a dtype cast and back (_to_copy)
    "view_dtype": ("int32", "float16", "none"),           # aten.view.dtype: a dtype-changing view
    "layout": ("transpose_reshape", "none"),              # a reshape of a transposed tensor: clone, then view
    "symbolic": (2, 1),                                   # a view with two symbolic sizes (h @ h.T) or not
    "activation": ("gelu", "layer_norm", "relu", "silu", "sin"),
}


def aot_program_plans() -> st.SearchStrategy[dict]:
    """Kata 8's fuzz models as plain data: number of inputs, outputs per NPU island, where the batch sits in views,
    casts, view.dtype, contiguity (transpose then reshape), one or two symbolic sizes, a CPU op or not."""
    return st.fixed_dictionaries({axis: st.sampled_from(values) for axis, values in AOT_PROGRAM_AXES.items()})


def linear_gelu_call_pairs_sharing_weight() -> st.SearchStrategy[tuple[dict, dict]]:
    """Kata 7: two calls of the fused op before one backward that share one weight tensor (tied or reused
    layers): the second call has the first's features and dtype, the other approximate and the other bias
    presence, so a backward that keeps its state keyed by the weight (not on ctx) gets a call wrong. Shrinks
    toward float32 calls."""
    def second(first: dict) -> st.SearchStrategy[dict]:
        return linear_gelu_calls().map(lambda other: {
            **other, "in_features": first["in_features"], "out_features": first["out_features"],
            "dtype": first["dtype"], "approximate": "tanh" if first["approximate"] == "none" else "none",
            "bias": not first["bias"], "x_requires_grad": True})

    return linear_gelu_calls_any_dtype().flatmap(lambda first: st.tuples(st.just(first), second(first)))


def linear_gelu_call_pairs_sharing_input() -> st.SearchStrategy[tuple[dict, dict]]:
    """Kata 7 (blind round 6): two calls of the fused op before one backward that take one x tensor (two heads
    reading one activation): the second call has the first's leading dimensions, in_features and dtype, its own
    weight, the other approximate and the other bias presence, so a backward that keeps its state keyed by x (its
    memory or its identity), not on ctx, gets a call wrong. Shrinks toward float32 calls."""
    def second(first: dict) -> st.SearchStrategy[dict]:
        return linear_gelu_calls().map(lambda other: {
            **other, "lead": first["lead"], "in_features": first["in_features"], "dtype": first["dtype"],
            "approximate": "tanh" if first["approximate"] == "none" else "none", "bias": not first["bias"],
            "x_requires_grad": True, "x_layout": first.get("x_layout", "contiguous")})

    return linear_gelu_calls_any_dtype().map(lambda first: {**first, "x_requires_grad": True}).flatmap(
        lambda first: st.tuples(st.just(first), second(first)))


# which inputs of kata 7's pair require grad in a trained layout (probes.GradLayout's fifth element): "x", "w", "b"
TRAINED_PAIR_INPUTS = (("x", "w", "b"), ("b",), ("x",), ("w",), ("x", "b"), ("w", "b"), ("x", "w"))


def trained_grad_mode_layouts(writes: tuple = IN_PLACE_WRITES, others: tuple = ()) -> st.SearchStrategy[tuple]:
    """Kata 7: `grad_mode_layouts` whose pair autograd records: a fifth element names which of the pair's inputs
    (x, weight, bias) require grad (TRAINED_PAIR_INPUTS). The fused op then saves x, weight and bias for its
    backward, so a write into one of them after the GELU's first reader matters, where eager's Linear + GELU
    saved less. Shrinks toward every input requiring grad."""
    return st.tuples(grad_mode_layouts(writes, others), st.sampled_from(TRAINED_PAIR_INPUTS)).map(
        lambda drawn: (*drawn[0], drawn[1]))


# kata 7 (blind round 4): how a step of a grad-mode layout sits in `with` blocks. True: outside every block (grad
# on); False: inside a `with torch.no_grad():` block; "nested": inside a `with torch.no_grad():` nested in such a
# block (grad off); "enable": inside a `with torch.enable_grad():` nested in such a block (grad on again).
GRAD_LAYOUT_BLOCKS = (False, True, "nested", "enable")
# kata 7 (blind round 6): a layout whose steps start with this pseudo-step is called under torch.no_grad(): its
# graph starts with grad off, and Dynamo writes no switch before the first step (probes.ENTRY_OFF)
GRAD_LAYOUT_ENTRY_OFF = ("called under torch.no_grad()", False)


def grad_mode_block_layouts() -> st.SearchStrategy[tuple]:
    """Kata 7: `grad_mode_layouts` shaped by grad-mode blocks, with no in-place write: the pair's Linear, GELU and
    first reader (maybe a second reader) and one or two unrelated values, each step in one of GRAD_LAYOUT_BLOCKS,
    and the first step an unrelated value inside a block, so the graph switches the grad mode before the pair
    (a filter that takes the mode before any switch as unknown or as grad-on then meets a switch it must follow).
    The Linear, the GELU and the insertion point each land in a block of their own, together, nested, or with a
    block between them that closes before the reader. Half of the layouts are called under torch.no_grad()
    (GRAD_LAYOUT_ENTRY_OFF first): the graph then starts with grad off, with no switch saying so, and only the
    enable_grad blocks run with grad on. Shrinks toward a closed `no_grad` block, then the pair with grad on."""
    return _grad_mode_block_layout()


@st.composite
def _grad_mode_block_layout(draw) -> tuple:
    kinds = ["linear", "gelu", "reader"]
    if draw(st.booleans()):
        kinds.append("reader2")
    if draw(st.booleans()):
        kinds.insert(draw(st.integers(min_value=0, max_value=len(kinds))), "unrelated")
    blocks = [draw(st.sampled_from((False, "nested", "enable")))]
    blocks += draw(st.lists(st.sampled_from((True, False, "nested", "enable")), min_size=len(kinds),
                            max_size=len(kinds)))
    entry = (GRAD_LAYOUT_ENTRY_OFF,) if draw(st.booleans()) else ()
    return ("layout", entry + tuple(zip(["unrelated"] + kinds, blocks)), draw(st.sampled_from(GRAD_LAYOUT_GELU_FORMS)),
            draw(st.integers(min_value=0, max_value=2**16)))
