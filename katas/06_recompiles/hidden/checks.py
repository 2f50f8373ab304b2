"""Hidden checks for kata 6 (guards, recompiles, a shape-static NPU). Learners: solve the kata from README.md,
not from here.

Three witnesses, none of them the attempt:
- Dynamo itself, run in this process: every prediction is compared with what `torch.compile(scaled_relu,
  dynamic=...)` really does on the same calls (a recording backend counts the graphs, reads which inputs each
  keeps symbolic from its placeholders, and sees which calls ran in a graph); the guard failures Dynamo records
  go into the message. Nothing is compared with the reference's predictions.
- For the fixes, a recording backend around the attempt's compiled fix (probes.run_fix) and the suspects run
  eagerly here (suspects_hidden.py).
- For the buckets, the simulated NPU's own counters, read in this process: programs compiled, runs, and the
  bytes each run uploaded (which say which bucket a call used).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import torch
import torch._dynamo
import torch._dynamo.utils
from hypothesis import strategies as st

from checker.kit import load_module
from checker.kit import CheckFailed, Checks, expect, fuzz
from katas.common import describe
from katas.common.models import NPU_FRIENDLY_ACTIVATIONS, LayerSpec, MLPSpec, build_mlp
from katas.common.npu import DEVICE, DeviceService, NPUFallbackWarning, NPUStats
from katas.common.quiet import quiet
from katas.common.strategies import mlp_specs

_HIDDEN = Path(__file__).parent
probes = load_module(_HIDDEN / "probes.py", "kata06_recompiles_probes")
suspects = load_module(_HIDDEN / "suspects_hidden.py", "kata06_suspects_hidden")

CHECKS = Checks()
# The attempt's BucketedNPU compiles for and runs on this process's DEVICE, served across the boundary.
CHECKS.services.update(DeviceService().handlers())
CHECKS.worker_setup.append("katas.common.npu:connect_to_device_service")


# --- Part 1: what Dynamo really does ---------------------------------------------------------------------

@dataclass(frozen=True)
class Seen:
    """One call of the compiled suspect as this process measured it."""

    kind: str  # compile | reuse | eager
    symbolic: tuple[str, ...]
    guard_failures: tuple[str, ...]  # Dynamo's words for each cached graph that refused this call
    ties: tuple[tuple[str, ...], ...] = ()  # compile: the inputs that share one symbol (duck sizing), per symbol
    graph: int | None = None  # compile or reuse: the index of the graph that ran the call, in compile order


def call_text(call: tuple) -> str:
    shape, n, dtype = call
    return f"f(x: {tuple(shape)} {dtype}, n={n})"


def _symbolic_inputs(gm: torch.fx.GraphModule) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """The inputs a Dynamo graph keeps symbolic, read from its placeholders, and the groups of them that share one
    symbol (duck sizing: `l_x_` of size (s77, s77) ties x.0 to x.1)."""
    by_symbol: dict[str, list[str]] = {}
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        value = node.meta.get("example_value")
        if isinstance(value, torch.Tensor) and node.name == "l_x_":
            for i, size in enumerate(value.shape):
                if isinstance(size, torch.SymInt):
                    by_symbol.setdefault(str(size), []).append(f"x.{i}")
        elif node.name == "l_n_" and isinstance(value, torch.SymInt):
            by_symbol.setdefault(str(value), []).append("n")
    names = tuple(sorted(name for group in by_symbol.values() for name in group))
    return names, tuple(sorted(tuple(sorted(group)) for group in by_symbol.values() if len(group) > 1))


def measure(calls: Sequence[tuple], dynamic: bool | None) -> list[Seen]:
    """Call torch.compile(scaled_relu, dynamic=dynamic) on `calls` after torch._dynamo.reset(), with Dynamo's
    default cache settings, and note what each call did."""
    torch._dynamo.reset()
    graphs: list[tuple[str, ...]] = []
    ran: list[int] = []
    backend = probes.recording_backend(graphs, ran, _symbolic_inputs)
    seen = []
    failures = torch._dynamo.utils.guard_failures
    with torch._dynamo.config.patch(probes.DEFAULT_CACHE_CONFIG), quiet():
        compiled = torch.compile(suspects.scaled_relu, backend=backend, dynamic=dynamic)
        for shape, n, dtype in calls:
            before_graphs, before_ran = len(graphs), len(ran)
            before_failures = sum(len(v) for v in failures.values())
            compiled(torch.ones(*shape, dtype=getattr(torch, dtype)), n)
            reasons = [str(r) for v in failures.values() for r in v][before_failures:]
            if len(graphs) > before_graphs:
                symbolic, ties = graphs[-1]
                seen.append(Seen("compile", symbolic, tuple(reasons), ties, len(graphs) - 1))
            elif len(ran) > before_ran:
                seen.append(Seen("reuse", (), tuple(reasons), (), ran[-1]))
            else:
                seen.append(Seen("eager", (), tuple(reasons)))
    torch._dynamo.reset()
    return seen


def _shown(kind: str | None, symbolic: Sequence[str] | None) -> str:
    if kind != "compile":
        return str(kind)
    return f"compile ({', '.join(symbolic) + ' symbolic' if symbolic else 'all static'})"


def _shown_dynamo(seen: Seen, compiled_at: dict[int, int]) -> str:
    """What Dynamo did on a call, with what a prediction's kind and set cannot show: the inputs that share one
    symbol in a new graph, and which earlier graph (by the call that compiled it) served a reuse."""
    if seen.kind == "compile" and seen.ties:
        shared = "; ".join(" = ".join(group) for group in seen.ties)
        return f"compile ({', '.join(seen.symbolic)} symbolic; {shared} share one symbol)"
    if seen.kind == "reuse" and seen.graph in compiled_at:
        return f"reuse (the graph of call {compiled_at[seen.graph]})"
    return _shown(seen.kind, seen.symbolic)


def _value(call: tuple, name: str) -> int:
    shape, n, _ = call
    return n if name == "n" else shape[int(name[2:])]


def _accepts(graph_call: tuple, graph: Seen, call: tuple, ties: bool = True) -> bool:
    """Whether the graph Dynamo compiled for `graph_call` accepts `call` (README.md, rule 2), with or without its
    duck-sizing guards (the inputs that share a symbol stay equal)."""
    if call[2] != graph_call[2] or len(call[0]) != len(graph_call[0]):
        return False
    for name in [f"x.{i}" for i in range(len(call[0]))] + ["n"]:
        if name not in graph.symbolic:
            if _value(call, name) != _value(graph_call, name):
                return False
        elif name != "n" and _value(call, name) < 2:
            return False
    return not ties or all(len({_value(call, name) for name in group}) == 1 for group in graph.ties)


def _deciding_rule(calls: Sequence[tuple], truth: Sequence[Seen], index: int) -> str:
    """When one side compiled and the other reused call `index` (0-based), and every earlier call agreed, the
    graphs on both sides keep the same inputs symbolic: what decided is often which of them share a symbol (rule
    6). Say so, from Dynamo's own graphs, when it did."""
    call, seen = calls[index], truth[index]
    made = [(i + 1, calls[i], s) for i, s in enumerate(truth[:index]) if s.kind == "compile"]
    if seen.kind == "compile":
        for at, graph_call, graph in made:
            if _accepts(graph_call, graph, call, ties=False) and not _accepts(graph_call, graph, call):
                group = next(g for g in graph.ties if len({_value(call, name) for name in g}) > 1)
                return (f"\nWhat decided: Dynamo's graph of call {at} gives {' and '.join(group)} one symbol (they "
                        f"were equal there, and Dynamo had not seen them change at a compile before: duck sizing, "
                        f"rule 6), so it guards that they stay equal, and in this call they differ. Rule 2: a graph "
                        f"accepts a call only if the sizes that share a symbol are equal to each other.")
        return ""
    if seen.kind != "reuse" or seen.graph is None or seen.graph >= len(made):
        return ""
    at, graph_call, graph = made[seen.graph]
    apart = [(a, b) for i, a in enumerate(graph.symbolic) for b in graph.symbolic[i + 1:]
             if _value(graph_call, a) == _value(graph_call, b) and _value(call, a) != _value(call, b)
             and not any(a in g and b in g for g in graph.ties)]
    if not apart:
        return ""
    a, b = apart[0]
    if "n" in (a, b):
        return (f"\nWhat decided: Dynamo served it with the graph of call {at}, in which {a} and {b} were equal but "
                f"have a symbol each: rule 6, n never shares a symbol with a size, so nothing guards that they stay "
                f"equal.")
    return (f"\nWhat decided: Dynamo served it with the graph of call {at}, in which {a} and {b} were equal but have "
            f"a symbol each, so nothing guards that they stay equal: rule 6, once Dynamo has seen a dimension change "
            f"(at a compile; a change to 0 or 1 and a change of rank count), that dimension gets a symbol of its own "
            f"in every later graph.")


def _why_symbolic(calls: Sequence[tuple], truth: Sequence[Seen], index: int, dynamic: bool | None,
                  predicted: Sequence[str]) -> str:
    """When both sides compiled call `index` (0-based) and keep different inputs symbolic: for the first input they
    disagree on, the rule that decided it, worked out from the calls Dynamo compiled before (rules 3 and 5). Says
    nothing when the rules, so applied, would not give Dynamo's answer."""
    call, seen = calls[index], truth[index]
    differing = sorted(set(predicted) ^ set(seen.symbolic))
    if not differing:
        return ""
    name = differing[0]
    value = _value(call, name) if name == "n" or int(name[2:]) < len(call[0]) else None
    if name == "n" and name in seen.symbolic and value in (0, 1):
        return (f"\nWhat decided: n is {value} in this call and symbolic in Dynamo's graph. Rule 3 (sizes 0 and 1 are "
                f"never symbolic) does not apply to ints: a symbolic n takes 0 and 1 like any other value.")
    if name != "n" and name not in seen.symbolic and value in (0, 1):
        return (f"\nWhat decided: {name} is {value} in this call. Rule 3: a size of 0 or 1 is static in the graph "
                f"compiled for it, whatever the setting (the dimension is still marked for later graphs, rule 5).")
    if dynamic is not None or value is None or value in (0, 1):
        return ""
    compiled = [(i + 1, calls[i]) for i, s in enumerate(truth[:index]) if s.kind == "compile"] + [(index + 1, call)]
    ranks = {len(c[0]) for _, c in compiled}
    values = [(at, _value(c, name)) for at, c in compiled if name == "n" or int(name[2:]) < len(c[0])]
    changed = next(((a, b) for a, b in zip(values, values[1:]) if a[1] != b[1]), None)
    if name in seen.symbolic:
        if name != "n" and len(ranks) > 1:
            return (f"\nWhat decided: the rank of x changed between the calls Dynamo compiled (calls "
                    f"{', '.join(str(at) for at, _ in compiled)}), and a change of rank marks every dimension of x "
                    f"(rule 5).")
        if changed is None:
            return ""
        (at_a, was), (at_b, now) = changed
        zero_one = " A change to 0 or 1 is a change too." if 1 >= min(was, now) else ""
        return (f"\nWhat decided: {name} was {was} when call {at_a} compiled and {now} when call {at_b} compiled: it "
                f"changed between two compiles, so it is marked dynamic for good (rule 5).{zero_one}")
    if changed is not None or (name != "n" and len(ranks) > 1):
        return ""
    served = [i + 1 for i, s in enumerate(truth[:index]) if s.kind != "compile"]
    return (f"\nWhat decided: {name} was {value} at every compile so far (calls "
            f"{', '.join(str(at) for at, _ in compiled)}), so nothing marked it. Dynamo remembers only the values "
            f"of the calls it compiled: "
            + (f"the calls a cached graph served ({', '.join(map(str, served[:6]))}) change nothing in that memory, "
               f"and " if served else "")
            + "a recompile caused only by a dtype change or another input makes nothing new symbolic (rule 5).")


def _reasons(seen: Seen) -> str:
    if not seen.guard_failures:
        return ""
    # a guard on a value ends in "# <source line> # <file:line> ... User stack trace": the guard is what teaches
    shown = "\n".join(f"  - {' '.join(r.split('#')[0].split())[:160]}" for r in seen.guard_failures[:4])
    more = f"\n  (and {len(seen.guard_failures) - 4} more)" if len(seen.guard_failures) > 4 else ""
    return f"\nDynamo's guard failures on this call (TORCH_LOGS=recompiles shows the same):\n{shown}{more}"


def _rule_broken(mine: str, dynamo: str, lesson: str) -> str:
    """The lesson sentence for the first difference: a compile against a reuse is about which graph accepts a call
    (rules 1 and 2), one side eager about the recompile limit (rule 1); two compiles that keep different inputs
    symbolic are about what the check tests (`lesson`)."""
    kinds = {mine, dynamo}
    if not kinds <= {"compile", "reuse", "eager"}:
        return f"An Outcome's kind is 'compile', 'reuse' or 'eager' (README.md, 'Predict'), not {mine!r}."
    if "eager" in kinds and "reuse" not in kinds:
        return LIMIT
    if kinds == {"eager", "reuse"}:
        return LIMIT_FITS
    if kinds != {"compile"}:
        return ACCEPTING
    return lesson


def compare_predictions(ctx, calls: Sequence[tuple], dynamic: bool | None, lesson: str) -> None:
    """The attempt's predict() against what Dynamo did, call by call; the message names the first difference and
    the rule it breaks: `lesson` when both compiled a graph, rules 1 and 2 when only one side did."""
    got = ctx.probe(probes.predictions, [tuple(c) for c in calls], dynamic)
    truth = measure(calls, dynamic)
    listing = ", ".join(call_text(c) for c in calls)
    head = f"torch.compile(scaled_relu, dynamic={dynamic}) called with {listing}:"
    expect(got["type"] in ("list", "tuple"), f"{head}\npredict returned a {got['type']}; it returns a list of Outcome, "
                                             "one per call.")
    items = got["items"]
    expect(len(items) == len(calls), f"{head}\npredict returned {len(items)} outcome(s) for {len(calls)} call(s).")
    for index, (item, seen) in enumerate(zip(items, truth), start=1):
        expect(item["kind"] is not None and item["symbolic"] is not None,
               f"{head}\ncall {index}: predict returned {item['repr']}; each outcome needs a str `kind` and a set "
               f"`symbolic`.")
        mine = (item["kind"], tuple(item["symbolic"]) if item["kind"] == "compile" else ())
        if mine != (seen.kind, seen.symbolic):
            compiled_at = {s.graph: i for i, s in enumerate(truth, start=1) if s.kind == "compile"}
            done = "\n".join(f"  call {i}: {call_text(c)} -> {_shown_dynamo(s, compiled_at)}"
                             for i, (c, s) in enumerate(zip(calls[:index - 1], truth), start=1))
            rule = _rule_broken(mine[0], seen.kind, lesson)
            raise CheckFailed(
                f"{head}\n" + (f"{done}\n" if done else "")
                + f"call {index}: {call_text(calls[index - 1])}: you predicted {_shown(*mine)}; Dynamo did "
                f"{_shown_dynamo(seen, compiled_at)}.{_reasons(seen)}"
                + (_deciding_rule(calls, truth, index - 1) if rule in (ACCEPTING, LIMIT_FITS) else "")
                + (_why_symbolic(calls, truth, index - 1, dynamic, mine[1]) if mine[0] == seen.kind == "compile"
                   else "") + f"\n{rule}"
                + ("\nYour predict() called torch.compile. The checks run it with torch.compile forced to run eagerly "
                   "(set_stance('force_eager')): a prediction comes from the rules, not from Dynamo."
                   if got.get("called_torch_compile") else ""))


STATIC = "README.md, 'Predict': with dynamic=False every graph is static, and the cache holds 8 graphs."
AUTOMATIC = ("README.md, 'Predict': with dynamic=None the first graph is static; a recompile makes symbolic "
             "exactly the inputs whose value has changed since the first call, except sizes 0 and 1.")
DYNAMIC = ("README.md, 'Predict': with dynamic=True every input is symbolic from the first call, except sizes 0 "
           "and 1; equal sizes share a symbol unless a recompile has already seen them differ.")
ACCEPTING = ("README.md, 'Predict', rules 1 and 2: a call is served by any cached graph that accepts it: the same "
             "dtype and rank, each static size and static n equal, each symbolic size at least 2 (never 0 or 1), "
             "sizes that share a symbol (duck sizing, rule 6) equal to each other, any value of a symbolic n. Only "
             "when no cached graph accepts it is a new graph compiled.")
LIMIT = ("README.md, 'Predict', rule 1: a new graph is compiled only while fewer than 8 are cached; then a call "
         "no cached graph accepts runs eagerly.")
LIMIT_FITS = ("README.md, 'Predict', rule 1: with 8 graphs cached, a call no cached graph accepts runs eagerly; "
              "calls a cached graph does fit still use it (rule 2).")
ZERO_ONE = ("README.md, 'Predict', rule 3: sizes 0 and 1 are never symbolic: a dimension of size 0 or 1 in the call "
            "being compiled is static in that graph, whatever the setting.")
DTYPE = ("README.md, 'Predict', rule 5: Dynamo remembers the values per frame, not per dtype: a recompile caused "
         "only by a dtype change makes nothing new symbolic, and an input that changed before, under any dtype, "
         "stays symbolic in every later graph.")
RANK = ("README.md, 'Predict', rule 5: a change of rank changes every dimension of x at once: from then on every "
        "dimension of x is symbolic (except sizes 0 and 1), each with a symbol of its own.")


def calls_of(*items) -> list[tuple]:
    """Calls from (shape, n, dtype) with n and dtype optional."""
    out = []
    for item in items:
        shape, *rest = item if isinstance(item[0], tuple) else (item,)
        out.append((tuple(shape), rest[0] if rest else 1, rest[1] if len(rest) > 1 else "float32"))
    return out


SIZES = st.integers(min_value=0, max_value=5)  # 0 and 1: rule 3; 2: the smallest symbolic size


@st.composite
def call_sequences(draw, max_calls: int = 10) -> list[tuple]:
    """Calls of scaled_relu varying along every input axis the lesson's rules name: x of rank 1 to 3 with sizes
    0..5 (a sequence keeps its rank, as a model's input does, or changes it now and then: rule 5's rank change),
    n in 0..3, float32 or float16. Shrinks toward short sequences of small, equal, float32 calls of one rank."""
    rank = draw(st.integers(min_value=1, max_value=3))
    calls = []
    for _ in range(draw(st.integers(min_value=1, max_value=max_calls))):
        if draw(st.integers(min_value=0, max_value=5)) == 5:  # about one call in six changes the rank
            rank = draw(st.integers(min_value=1, max_value=3))
        calls.append((draw(st.tuples(*[SIZES] * rank)), draw(st.integers(min_value=0, max_value=3)),
                      draw(st.sampled_from(("float32", "float16")))))
    return calls


def describe_calls(calls: list[tuple]) -> str:
    return "\n".join(f"  {call_text(c)}" for c in calls)


def fuzz_predictions(ctx, dynamic: bool | None, lesson: str) -> None:
    fuzz(ctx, call_sequences(), lambda calls: compare_predictions(ctx, calls, dynamic, lesson),
         describe=describe_calls, max_examples=5 if not ctx.deep else 10)


EQUAL_PRONE = st.integers(min_value=2, max_value=4)  # few values, so that sizes (and n) are often equal


@st.composite
def later_graph_sequences(draw, max_rounds: int = 3) -> list[tuple]:
    """Calls that reach the graphs after the first with equal sizes still unchanged. The first call has x of rank 2
    or 3 with two equal sizes, and n often equal to a size. Then one to `max_rounds` rounds, each: maybe a side trip
    a cached graph may serve (an earlier call again, or every dimension of one size given a new common size: a
    reuse, which leaves the frame's memory alone); a call that compiles again while equal sizes stay equal (the other
    dtype, or a change of rank to a new shape with two equal sizes, whose later calls keep that rank) or a new n
    (often equal to a size), at the sizes before the side trip; then one size changed to 0..5, which tells whether
    that graph duck-sized its equal sizes. Shrinks toward a dtype change and one size changed, in one round."""
    def equal_pair_shape(rank: int) -> tuple:
        shape = [draw(st.integers(min_value=2, max_value=5)) for _ in range(rank)]
        first, second = draw(st.sampled_from([(a, b) for a in range(rank) for b in range(a + 1, rank)]))
        shape[first] = shape[second] = draw(EQUAL_PRONE)
        return tuple(shape)

    shape = equal_pair_shape(draw(st.integers(min_value=2, max_value=3)))
    n, dtype = draw(st.sampled_from((*shape, 0, 1))), "float32"
    calls = [(shape, n, dtype)]
    for _ in range(draw(st.integers(min_value=1, max_value=max_rounds))):
        served = draw(st.sampled_from(("none", "resize", "repeat", "resize")))
        if served == "resize":  # a side trip: the calls after it go back to `shape`
            old, new = draw(st.sampled_from(shape)), draw(st.integers(min_value=2, max_value=5))
            calls.append((tuple(new if size == old else size for size in shape), n, dtype))
        elif served == "repeat":
            calls.append(draw(st.sampled_from(calls)))
        again = draw(st.sampled_from(("dtype", "rank", "dtype", "n")))
        if again == "dtype":
            dtype = "float16" if dtype == "float32" else "float32"
        elif again == "rank":
            shape = equal_pair_shape(5 - len(shape))  # rank 2 <-> 3
        else:
            n = draw(st.sampled_from((*shape, 0, 1, 2, 3)))
        calls.append((shape, n, dtype))
        index = draw(st.integers(min_value=0, max_value=len(shape) - 1))
        shape = (*shape[:index], draw(st.integers(min_value=0, max_value=5)), *shape[index + 1:])
        calls.append((shape, n, dtype))
    return calls


SETTINGS = ((False, STATIC), (None, AUTOMATIC), (True, DYNAMIC))


@CHECKS.check(stage="dynamic", weight=3)
def random_reuses_and_recompiles_every_setting(ctx):
    """random sequences of reuses, dtype changes, equal sizes, n equal to a size and rank changes, every setting"""
    def prop(calls) -> None:
        for dynamic, lesson in SETTINGS:
            compare_predictions(ctx, calls, dynamic, lesson)

    fuzz(ctx, later_graph_sequences(), prop, describe=describe_calls, max_examples=3 if not ctx.deep else 12)


@CHECKS.check(stage="dynamic", weight=2)
def duck_sizing_in_every_graph(ctx):
    """dynamic=True: sizes that never changed still share a symbol in later graphs; a reuse changes no memory"""
    lesson = ("README.md, 'Predict', rule 6: duck sizing holds in every graph the frame compiles, not only the first: "
              "dimensions whose size has not changed since the frame's first graph share a symbol when equal. Dynamo "
              "remembers the values each input had when a graph was compiled; a call a cached graph serves changes "
              "nothing in that memory (rule 5).")
    compare_predictions(ctx, calls_of((3, 3), ((3, 3), 1, "float16"), ((4, 5), 1, "float16")), True, lesson)
    compare_predictions(ctx, calls_of((3, 3), (4, 4), ((3, 3), 1, "float16"), ((4, 5), 1, "float16")), True, lesson)
    compare_predictions(ctx, calls_of((2, 2, 3), (4, 4, 5), ((4, 4, 5), 1, "float16"), ((4, 6, 5), 1, "float16")),
                        True, lesson)


@CHECKS.check(stage="dynamic", weight=1)
def n_never_shares_a_symbol(ctx):
    """dynamic=True: n equal to a size keeps a symbol of its own, so the sizes may change while n stays"""
    lesson = ("README.md, 'Predict', rule 6: duck sizing is about sizes of x: n never shares a symbol with a size, even "
              "when equal to it, and a symbolic n accepts any value (rule 2).")
    compare_predictions(ctx, calls_of(((3, 4), 3), ((5, 4), 3), ((5, 4), 4), ((5, 6), 6)), True, lesson)


@CHECKS.check(stage="static", weight=1)
def repeated_call_reuses_its_graph(ctx):
    """the same call three times: one graph, reused"""
    compare_predictions(ctx, calls_of((2, 4), (2, 4), (2, 4)), False, STATIC)


@CHECKS.check(stage="static", weight=2)
def static_graph_per_shape_dtype_and_int(ctx):
    """dynamic=False: a new size, rank, dtype or int value is a new graph; an old one is reused"""
    calls = calls_of((2, 4), (3, 4), ((2, 4), 1, "float16"), ((2, 4), 2), (2, 4), ((3, 4), 2))
    compare_predictions(ctx, calls, False, STATIC)
    compare_predictions(ctx, calls_of((2, 4, 3), (2, 4)), False, STATIC)  # a new rank is a new graph too


@CHECKS.check(stage="static", weight=2)
def recompile_limit_then_eager(ctx):
    """past 8 graphs a new call runs eagerly, and calls the 8 graphs fit still reuse them"""
    calls = calls_of(*[(b, 3) for b in range(1, 11)], (3, 3), (9, 3))
    compare_predictions(ctx, calls, False, STATIC)


@CHECKS.check(stage="static", weight=3)
def random_calls_static(ctx):
    """random call sequences, dynamic=False"""
    fuzz_predictions(ctx, False, STATIC)


@CHECKS.check(stage="automatic", weight=3)
def changed_size_becomes_symbolic(ctx):
    """dynamic=None: the first graph is static; a recompile makes the changed dimensions symbolic, only those"""
    calls = calls_of((2, 4), (3, 4), (7, 4), (3, 5), (6, 9))
    compare_predictions(ctx, calls, None, AUTOMATIC)


@CHECKS.check(stage="automatic", weight=2)
def sizes_0_and_1_stay_static(ctx):
    """a size of 0 or 1 never becomes symbolic, so it gets a graph of its own; 2 is a symbolic size"""
    compare_predictions(ctx, calls_of((2, 4), (3, 4), (1, 4), (1, 4), (5, 4)), None, ZERO_ONE)
    compare_predictions(ctx, calls_of((3, 4), (4, 4), (2, 4), (1, 4)), None, ZERO_ONE)
    compare_predictions(ctx, calls_of((2, 4), (3, 4), (0, 4), (0, 4), (5, 4)), None, ZERO_ONE)
    compare_predictions(ctx, calls_of((0, 4), (0, 6), (3, 0), (4, 4)), True, ZERO_ONE)


@CHECKS.check(stage="automatic", weight=2)
def a_change_to_0_or_1_marks_the_dimension(ctx):
    """a size changed to 0 or 1 is static in its own graph but marks its dimension, under dynamic=None and True"""
    lesson = ("README.md, 'Predict', rule 5: a change to 0 or 1 is a change too: the graph compiled for it is static "
              "at that size (rule 3), but the dimension is marked dynamic for good, so it is symbolic in a later "
              "graph at a size of 2 or more, and under dynamic=True it gets a symbol of its own (rule 6).")
    # a recompile by n or by dtype back at the first sizes: only the memory of the change to 0 or 1 decides
    compare_predictions(ctx, calls_of((2, 4), (1, 4), ((2, 4), 2)), None, lesson)
    compare_predictions(ctx, calls_of((3, 4), (3, 0), ((3, 4), 1, "float16")), None, lesson)
    compare_predictions(ctx, calls_of((3, 3), (1, 3), ((3, 3), 1, "float16"), ((3, 4), 1, "float16")), True, lesson)
    compare_predictions(ctx, calls_of((3, 3), (3, 0), ((3, 3), 1, "float16"), ((4, 3), 1, "float16")), True, lesson)


@CHECKS.check(stage="automatic", weight=2)
def changed_int_becomes_symbolic(ctx):
    """dynamic=None: an int that changes becomes symbolic, and a symbolic int takes 0 and 1 too"""
    calls = calls_of(((2, 4), 2), ((2, 4), 3), ((2, 4), 1), ((2, 4), 0), ((3, 4), 0))
    compare_predictions(ctx, calls, None, AUTOMATIC)


@CHECKS.check(stage="automatic", weight=1)
def dtype_change_compiles_again(ctx):
    """dynamic=None: a new dtype is a new graph, symbolic where sizes have changed before, under any dtype"""
    calls = calls_of((2, 4), ((2, 4), 1, "float16"), ((3, 4), 1, "float16"), (3, 4), (5, 4))
    compare_predictions(ctx, calls, None, DTYPE)
    calls = calls_of((2, 4), (3, 4), ((3, 4), 1, "float16"), ((5, 4), 1, "float16"))
    compare_predictions(ctx, calls, None, DTYPE)


@CHECKS.check(stage="automatic", weight=2)
def changed_rank_makes_every_dimension_symbolic(ctx):
    """dynamic=None: once x's rank changes, every dimension of x is symbolic in every later graph"""
    compare_predictions(ctx, calls_of((2, 4), (2, 4, 5), (2, 4, 6), (2, 5)), None, RANK)
    compare_predictions(ctx, calls_of((3,), (3, 3), (4, 5), (2, 4, 1)), None, RANK)
    compare_predictions(ctx, calls_of((2, 4), (2, 4, 5), (2, 1, 5), ((2, 4, 5), 1, "float16")), None, RANK)


@CHECKS.check(stage="automatic", weight=3)
def random_calls_automatic(ctx):
    """random call sequences, dynamic=None (the default)"""
    fuzz_predictions(ctx, None, AUTOMATIC)


@CHECKS.check(stage="dynamic", weight=2)
def symbolic_from_the_first_call(ctx):
    """dynamic=True: the first graph is symbolic in every size but 0 and 1, and in n"""
    calls = calls_of(((2, 4), 1), ((5, 7), 3), ((1, 4), 0), ((1, 6), 2))
    compare_predictions(ctx, calls, True, DYNAMIC)


@CHECKS.check(stage="dynamic", weight=2)
def equal_sizes_share_a_symbol(ctx):
    """dynamic=True: equal sizes in the first call share one symbol, so unequal ones recompile"""
    calls = calls_of((3, 3), (5, 5), (3, 4), (6, 6), (2, 2, 5))
    compare_predictions(ctx, calls, True, DYNAMIC)


@CHECKS.check(stage="dynamic", weight=2)
def sizes_seen_changing_get_their_own_symbol(ctx):
    """sizes Dynamo has seen change (a rank change changes them all) get a symbol each, under dynamic=None and True"""
    lesson = ("README.md, 'Predict', rule 6: a dimension Dynamo has seen change gets a symbol of its own, and a change "
              "of rank changes every dimension (rule 5); only sizes made symbolic up front by dynamic=True share a "
              "symbol when equal.")
    compare_predictions(ctx, calls_of((3, 3), (4, 4), (4, 5), (6, 6)), None, lesson)
    calls = calls_of((3, 3), ((4, 4), 1, "float16"), ((5, 6), 1, "float16"), ((5, 6), 2))
    compare_predictions(ctx, calls, True, lesson)
    # dynamic=True, a rank change to equal sizes, then they differ: up, down, and equal only in the new dimensions
    compare_predictions(ctx, calls_of((3, 3), (3, 3, 3), (3, 4, 5)), True, lesson)
    compare_predictions(ctx, calls_of((3, 3, 3), (3, 3), (3, 4)), True, lesson)
    compare_predictions(ctx, calls_of((4,), (2, 3, 3), (2, 3, 5)), True, lesson)


@CHECKS.check(stage="dynamic", weight=3)
def random_calls_dynamic(ctx):
    """random call sequences, dynamic=True"""
    fuzz_predictions(ctx, True, DYNAMIC)


# --- Part 2: the fixes --------------------------------------------------------------------------------------

MAX_FIX_GRAPHS = 2


@dataclass(frozen=True)
class FixSpec:
    name: str          # the attempt's fix
    suspect: str       # the suspect it replaces
    shapes: tuple      # the input shape of each call, in order
    why: str           # what made the suspect recompile
    answer: str        # what the suspect answers, for a message about a wrong answer
    arguments: tuple = ()  # constructor arguments, as (name, value) pairs: the suspect and the fix get the same


FIXES = {
    "FixedDecayingHead": FixSpec("FixedDecayingHead", "DecayingHead", ((2, 4),) * 12,
                                 "Dynamo guards on the value of the Python int self.calls",
                                 "call k of an instance returns proj(x) * rate ** k"),
    "FixedRunningMean": FixSpec("FixedRunningMean", "RunningMean", ((2, 4),) * 12,
                                "Dynamo guards on the length of the Python list self.seen",
                                "call k of an instance returns the mean of that instance's k inputs"),
    "fixed_rowwise_normalize": FixSpec("fixed_rowwise_normalize", "rowwise_normalize",
                                       tuple((b, 4) for b in (1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 2, 12)),
                                       "range(x.shape[0]) turns the batch size into a Python loop count",
                                       "each row is divided by its own norm, floored at 1e-6"),
}

# A row's norm by decade, 1e-9 to 10 (-10 stands for a row of zeros): the 1e-6 floor decides rows of norm 0 and
# below 1e-6, a floor put on the squared norm instead (1e-3 on the norm) rows up to 1e-3. Shrinks toward norm 1.
ROW_NORM_DECADES = st.integers(min_value=-10, max_value=1)


def row_norms(shapes: Sequence[tuple]) -> st.SearchStrategy:
    """The norm of every row of every call of `shapes`: 0, tiny (1e-9 to 1e-4) or ordinary (1e-3 to 10)."""
    return st.tuples(*[st.lists(ROW_NORM_DECADES.map(lambda e: 0.0 if e == -10 else 10.0 ** e),
                                min_size=shape[0], max_size=shape[0]).map(tuple) for shape in shapes])


@st.composite
def instance_schedules(draw, max_calls: int = 12) -> tuple[int, ...]:
    """Which of two instances of a module fix serves each call, in order (0 or 1); each serves at least once.
    Shrinks toward (0, 1): one call each."""
    calls = draw(st.lists(st.integers(min_value=0, max_value=1), min_size=1, max_size=max_calls - 1))
    return (*calls, 1 - calls[-1])


def _inputs(spec: FixSpec, seed: int, norms: Sequence[Sequence[float]] | None = None) -> list[torch.Tensor]:
    """Random inputs of the spec's shapes. Without `norms`, the fourth call's first row is zeros; with them, each
    row is scaled to its norm."""
    generator = torch.Generator().manual_seed(seed)
    inputs = [torch.randn(*shape, generator=generator) for shape in spec.shapes]
    if norms is None:
        inputs[3][0] = 0.0
        return inputs
    return [x / torch.linalg.vector_norm(x, dim=1, keepdim=True) * torch.tensor(n).unsqueeze(1)
            for x, n in zip(inputs, norms)]


def _suspect_instance(spec: FixSpec, seed: int):
    """The suspect, eager: a module built under `seed`, in eval mode, with its parameters; or the function."""
    suspect = getattr(suspects, spec.suspect)
    if not isinstance(suspect, type):
        return suspect, None
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        suspect = suspect(**dict(spec.arguments))
    return suspect.eval(), {k: v.detach().clone() for k, v in suspect.state_dict().items()}


def _eager_outputs(spec: FixSpec, inputs: list[torch.Tensor]) -> tuple[list[torch.Tensor], dict | None]:
    suspect, state = _suspect_instance(spec, 6)
    with torch.no_grad():
        return [suspect(x.clone()) for x in inputs], state


def _first_wrong_row(x: torch.Tensor, got: torch.Tensor, want: torch.Tensor) -> str:
    """Where an answer differs first, row by row, with that input row's norm; "" when the shapes differ."""
    if not (isinstance(got, torch.Tensor) and got.shape == want.shape == x.shape and x.dim() == 2):
        return ""
    for row in range(x.shape[0]):
        if not torch.allclose(got[row], want[row], rtol=1e-5, atol=1e-6):
            return (f"\nFirst row that differs: row {row}, whose input has norm "
                    f"{torch.linalg.vector_norm(x[row]).item():.3g}: expected {want[row].tolist()}, got "
                    f"{got[row].tolist()}.")
    return ""


def _settings_note(seen: dict) -> str:
    """The Dynamo settings the attempt changed (read after its fix was built and called), if any."""
    changed = seen.get("changed_settings") or {}
    if not changed:
        return ""
    said = ", ".join(f"torch._dynamo.config.{k} = {v!r} (torch's default: {probes.DEFAULT_CACHE_CONFIG[k]!r})"
                     for k, v in sorted(changed.items()))
    return (f"\nYour code set {said}. The checks compile every fix under torch's default settings, so that setting "
            f"was not in force here: changing a Dynamo setting is not a fix (README.md, 'Fix').")


def _shared_state_note(seen: dict) -> str:
    """The state outside the instance that the fix's calls changed (read in the worker), if any."""
    shared = seen.get("shared_state") or []
    if not shared:
        return ""
    return (f"\nYour fix's calls changed {', '.join(shared)}: state outside the instance, which every instance "
            f"shares, so an instance built after another starts where the earlier one stopped (the checks build a "
            f"new instance for every run). Keep the state in the instance's own buffers. README.md, 'Fix'.")


def _expect_calls(where: str, spec: FixSpec, seen: dict, inputs: list[torch.Tensor], expected: list[torch.Tensor],
                  label=lambda index: f"call {index}", why_wrong: str = "", by_row: bool = False) -> None:
    """Every call ran in a compiled graph, without error, and gave the suspect's answer (`by_row`: the message
    also shows the first row that differs, with its input's norm)."""
    expect(not seen["missing_parameters"],
           f"{spec.name} has no parameter named {', '.join(seen['missing_parameters'])}: keep the suspect's "
           f"parameters and their names, so that its weights load into your fix.")
    for index, (call, x, want) in enumerate(zip(seen["calls"], inputs, expected), start=1):
        if call["error"]:
            raise CheckFailed(f"{where}: {label(index)} failed under fullgraph=True: {call['error']}\n"
                              f"A fix keeps the whole forward in one graph, with no graph break, and stays under "
                              f"the recompile limit. README.md, 'Fix'.{_settings_note(seen)}")
        expect(call["in_graph"],
               f"{where}: {label(index)} ran eagerly: no compiled graph ran it (torch.compiler.disable, or a frame "
               f"Dynamo skipped). The fix must run in a compiled graph on every call. README.md, 'Fix'.")
        try:
            torch.testing.assert_close(call["output"], want, rtol=1e-5, atol=1e-6)
        except AssertionError as exc:
            raise CheckFailed(f"{where}: {label(index)} returned a different answer from suspects.{spec.suspect} "
                              f"on the same calls ({spec.answer}):\n{str(exc).strip()}"
                              f"{_first_wrong_row(x, call['output'], want) if by_row else ''}"
                              f"{_floor_hint(x, call['output'], want) if by_row else ''}"
                              f"{_shared_state_note(seen) or why_wrong}{_settings_note(seen)}") from None


def _built(spec: FixSpec) -> str:
    """How the fix was built: its name, or a module's constructor call when the checks gave arguments."""
    if not spec.arguments:
        return spec.name
    return f"{spec.name}({', '.join(f'{k}={v!r}' for k, v in spec.arguments)})"


def _floor_hint(x: torch.Tensor, got, want: torch.Tensor) -> str:
    """What the first row that differs says about the attempt's floor: an answer longer than the suspect's is a
    floor below 1e-6 (or none), a shorter one a floor above it."""
    if not (isinstance(got, torch.Tensor) and got.shape == want.shape == x.shape):
        return ""
    for row in range(x.shape[0]):
        if not torch.allclose(got[row], want[row], rtol=1e-5, atol=1e-6):
            norm = torch.linalg.vector_norm(x[row]).item()
            length = torch.linalg.vector_norm(got[row]).item()
            longer = length > torch.linalg.vector_norm(want[row]).item()
            divisor = f"by about {norm / length:.3g}" if length > 0 else "by more"
            side = ("longer than the suspect's: your floor is below 1e-6 or missing (F.normalize's default eps is "
                    "1e-12)" if longer else f"shorter than the suspect's: your code divided it {divisor}, the "
                    f"suspect by max(norm, 1e-6) = {max(norm, 1e-6):.3g}. Two usual causes: a floor above 1e-6 on "
                    f"the norm (a floor of 1e-6 on the squared norm is 1e-3 on the norm), or an eps added to every "
                    f"norm (x / (norm + 1e-6)), which shortens every row of a tiny norm")
            return (f"\nREADME.md, 'Fix': the floor is 1e-6 on each row's norm. Row {row} (input norm {norm:.3g}) came "
                    f"out {side}.")
    return ""


def check_fix(ctx, spec: FixSpec, norms: Sequence[Sequence[float]] | None = None) -> None:
    inputs = _inputs(spec, ctx.seed, norms)
    expected, state = _eager_outputs(spec, inputs)
    seen = ctx.probe(probes.run_fix, spec.name, inputs, state, dict(spec.arguments))
    where = (f"torch.compile({_built(spec)}, fullgraph=True) called {len(inputs)} times on inputs of shape "
             + ", ".join(str(s) for s in dict.fromkeys(spec.shapes))
             + ("" if norms is None else ", rows of the norms listed below"))
    _expect_calls(where, spec, seen, inputs, expected, by_row=norms is not None)
    graphs = len(seen["graphs"])
    expect(graphs <= MAX_FIX_GRAPHS,
           f"{where}: Dynamo compiled {graphs} graphs; a fix compiles at most {MAX_FIX_GRAPHS}. In the suspect, "
           f"{spec.why}. README.md, 'Fix'.")
    expect(graphs >= 1 and any(g["ops"] for g in seen["graphs"]),
           f"{where}: no graph with any op was compiled; the fix's work must happen inside the compiled graph.")
    _expect_through_aot_autograd(spec, seen["aot"], inputs, expected, where, by_row=norms is not None)


AOT_NOTE = ("torch.compile's default backend runs aot_autograd before Inductor generates code; the checks run that "
            "step with backend='aot_eager'")


def _expect_through_aot_autograd(spec: FixSpec, aot: dict, inputs: list[torch.Tensor], expected: list[torch.Tensor],
                                 where: str, by_row: bool = False) -> None:
    """The same calls through aot_autograd (backend="aot_eager"): at most MAX_FIX_GRAPHS graphs, every answer the
    suspect's. A Python float attribute passes Dynamo's graph as an input but is guarded on its value again here."""
    where = where.replace("fullgraph=True)", "fullgraph=True, backend='aot_eager')", 1)
    for index, (call, x, want) in enumerate(zip(aot["calls"], inputs, expected), start=1):
        expect(call["error"] is None,
               f"{where}: call {index} failed: {call['error']}\n{AOT_NOTE}, and there your fix compiled "
               f"{aot['graphs']} graph(s) by then. A Python number on the instance (self.calls = 0.0) becomes a "
               f"value aot_autograd guards on, so every call compiles again: keep changing state in tensor buffers. "
               f"README.md, 'Fix'.")
        try:
            torch.testing.assert_close(call["output"], want, rtol=1e-5, atol=1e-6)
        except AssertionError as exc:
            raise CheckFailed(
                f"{where}: call {index} returned a different answer from suspects.{spec.suspect} ({spec.answer}), "
                f"though Dynamo's own graph gave the right one:\n{str(exc).strip()}"
                f"{_first_wrong_row(x, call['output'], want) if by_row else ''}\n{AOT_NOTE}. Measured on torch "
                f"2.13: a float64 0-dim buffer updated in place (add_, mul_, copy_) is not updated there at all, and "
                f"a Python float on the instance can be baked in. Keep state in float32 or int64 buffers. "
                f"README.md, 'Fix'.") from None
    expect(aot["graphs"] <= MAX_FIX_GRAPHS,
           f"{where}: Dynamo compiled {aot['graphs']} graphs; a fix compiles at most {MAX_FIX_GRAPHS}, whatever the "
           f"backend. {AOT_NOTE}: there a Python number on the instance is guarded on its value, so each call that "
           f"changes it compiles again. README.md, 'Fix'.")


@CHECKS.check(stage="fix", weight=3)
def decaying_head_compiles_once(ctx):
    """FixedDecayingHead: 12 calls, at most 2 graphs, each call in a graph, the suspect's outputs"""
    check_fix(ctx, FIXES["FixedDecayingHead"])


@CHECKS.check(stage="fix", weight=3)
def running_mean_stops_recompiling(ctx):
    """FixedRunningMean: 12 calls, at most 2 graphs, each call in a graph, the suspect's outputs"""
    check_fix(ctx, FIXES["FixedRunningMean"])


def _describe_norms(norms) -> str:
    spec = FIXES["fixed_rowwise_normalize"]
    return "\n".join(f"  call {i} {shape}: row norms {', '.join(f'{n:g}' for n in row)}"
                     for i, (shape, row) in enumerate(zip(spec.shapes, norms), start=1))


@CHECKS.check(stage="fix", weight=3)
def rowwise_normalize_serves_every_batch(ctx):
    """fixed_rowwise_normalize: batch sizes 1 to 12, rows of norm 0 to 10: at most 2 graphs, the suspect's outputs"""
    spec = FIXES["fixed_rowwise_normalize"]
    fuzz(ctx, row_norms(spec.shapes), lambda norms: check_fix(ctx, spec, norms), describe=_describe_norms,
         max_examples=3 if not ctx.deep else 8)


@st.composite
def decaying_head_arguments(draw) -> tuple:
    """DecayingHead's constructor arguments other than the defaults: features 1 to 6 and a rate from 0.25 to 1.1
    (never the default 0.9). Shrinks toward features=1, rate=0.5."""
    features = draw(st.integers(min_value=1, max_value=6))
    rate = draw(st.sampled_from((0.5, 0.25, 0.75, 0.99, 1.1)))
    return (("features", features), ("rate", rate))


@CHECKS.check(stage="fix", weight=2)
def fixes_keep_constructor_arguments(ctx):
    """FixedDecayingHead built with other features and rate: the suspect's answers for those arguments"""
    base = FIXES["FixedDecayingHead"]

    def prop(arguments) -> None:
        features = dict(arguments)["features"]
        check_fix(ctx, replace(base, shapes=((2, features),) * 12, arguments=tuple(arguments),
                               answer=base.answer + " with the rate it was built with"))

    fuzz(ctx, decaying_head_arguments(), prop, describe=lambda a: f"  DecayingHead({', '.join(f'{k}={v!r}' for k, v in a)})",
         max_examples=2 if not ctx.deep else 6)


MODULE_FIXES = ("FixedDecayingHead", "FixedRunningMean")


def _describe_schedule(schedule: Sequence[int]) -> str:
    return f"  instances A and B, called in the order {' '.join('AB'[i] for i in schedule)}"


def check_instances(ctx, spec: FixSpec, schedule: Sequence[int]) -> None:
    """Two instances of a module fix, with the weights of two suspect instances (seeds 6 and 7), each compiled
    with fullgraph=True and called in the order `schedule`: each call answers as that instance's suspect would."""
    made = [_suspect_instance(spec, seed) for seed in (6, 7)]
    generator = torch.Generator().manual_seed(ctx.seed)
    inputs = [torch.randn(*spec.shapes[0], generator=generator) for _ in schedule]
    with torch.no_grad():
        expected = [made[who][0](x.clone()) for who, x in zip(schedule, inputs)]
    seen = ctx.probe(probes.run_fix_instances, spec.name, [state for _, state in made], list(schedule), inputs)
    weights = "other weights" if made[0][1] else "built one after the other"
    where = (f"two {spec.name} instances, A and B ({weights}), each compiled with torch.compile(..., "
             f"fullgraph=True), called in the order {' '.join('AB'[i] for i in schedule)} on x of shape "
             f"{spec.shapes[0]}")

    def label(index: int) -> str:
        who = schedule[index - 1]
        nth = schedule[:index].count(who)
        return f"call {index} ({'AB'[who]}'s {({1: 'first', 2: 'second', 3: 'third'}).get(nth, f'{nth}th')})"

    _expect_calls(where, spec, seen, inputs, expected, label,
                  f"\nEach instance keeps its own state, as two {spec.suspect} do: in its own buffers, not in a "
                  f"tensor at module level or on the class, which every instance shares. README.md, 'Fix'.")


@CHECKS.check(stage="fix", weight=2)
def each_instance_keeps_its_own_state(ctx):
    """two instances of each module fix, calls interleaved: each answers as its own suspect instance would"""
    def prop(schedule) -> None:
        for name in MODULE_FIXES:
            check_instances(ctx, FIXES[name], schedule)

    fuzz(ctx, instance_schedules(), prop, describe=_describe_schedule, max_examples=2 if not ctx.deep else 6)


# --- Part 3: buckets on the shape-static NPU ------------------------------------------------------------------

DEFAULT_BUCKETS = (1, 2, 4, 8)
SERVED = MLPSpec(in_features=5, layers=(LayerSpec(6, True, "gelu", "none"), LayerSpec(3, True, "relu", "none")),
                 batch_shape=(2,), seed=6)


def device_stats() -> NPUStats:
    """What the NPU reports about itself. The checks read the device here and nowhere else."""
    return copy.deepcopy(DEVICE.stats)


def _fresh_device() -> None:
    DEVICE.release_all()
    DEVICE.reset()


def bucket_for(batch: int, buckets: Sequence[int]) -> int | None:
    return min((b for b in buckets if b >= batch), default=None)


@dataclass
class Served:
    """One call of the attempt's server, with what the device and the host saw."""

    batch: int
    output: torch.Tensor | None
    expected: torch.Tensor
    warnings: list
    fallbacks: int | None
    stats: NPUStats


# What the device answers when a program it no longer holds is run (katas/common/npu/device.py).
GONE_PROGRAM = ("no program with handle", "was released from the NPU's program memory")


def _serve_call(ctx, key: str, x: torch.Tensor, what: str) -> dict:
    """One call of a server the probe keeps; a run of a program the device no longer has is told as what it
    means: the program came from another server."""
    try:
        return ctx.probe(probes.serve_call, key, x)
    except Exception as exc:  # noqa: BLE001 - only the device's "no program" answer is explained; the rest propagates
        said = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        if not any(words in said for words in GONE_PROGRAM):
            raise
        raise CheckFailed(
            f"{what}: the server ran a program the NPU no longer holds ({type(exc).__name__}: {said}). The checks "
            f"empty the device's program memory before they build new servers, so this program was compiled "
            f"for an earlier server: the bucket -> program table outlived its server (kept on the class or at module "
            f"level, which every server shares). Keep the table on the instance (self). README.md, 'Buckets'.") from None


def serve_batches(ctx, spec: MLPSpec, batches: Sequence[int], buckets: Sequence[int] | None) -> list[Served]:
    """A BucketedNPU of `spec` called on each batch size in turn; the device's counters are read per call."""
    _fresh_device()
    model = build_mlp(spec).eval()
    key = ctx.probe(probes.serve, spec, None if buckets is None else tuple(buckets))
    generator = torch.Generator().manual_seed(ctx.seed)
    served = []
    for batch in batches:
        x = torch.randn(batch, spec.in_features, generator=generator)
        with torch.no_grad():
            expected = model(x)
        DEVICE.reset()
        got = _serve_call(ctx, key, x, f"{_served_text(spec, buckets, batches)}batch {batch}")
        served.append(Served(batch, got["output"], expected, got["warnings"], got["fallbacks"], device_stats()))
    return served


def _served_text(spec: MLPSpec, buckets: Sequence[int] | None, batches: Sequence[int]) -> str:
    made = "BucketedNPU(model)" if buckets is None else f"BucketedNPU(model, buckets={tuple(buckets)})"
    model = "\n".join(f"  {line}" for line in describe(spec).splitlines())
    return f"{made} called with batch sizes {', '.join(map(str, batches))}, for this model:\n{model}\n"


def expect_answers(spec, buckets, batches, served: list[Served]) -> None:
    head = _served_text(spec, buckets, batches)
    for call in served:
        expect(call.output is not None, f"{head}batch {call.batch} returned no tensor.")
        try:
            torch.testing.assert_close(call.output, call.expected)
        except AssertionError as exc:
            raise CheckFailed(f"{head}batch {call.batch} does not give the model's answer:\n{str(exc).strip()}\n"
                              "Pad with zero rows up to the bucket, run, and keep the first `batch` rows.") from None


def expect_buckets(spec, buckets, batches, served: list[Served]) -> None:
    """Each call within the buckets ran one NPU program, on the smallest bucket that holds it."""
    head = _served_text(spec, buckets, batches)
    chosen = buckets or DEFAULT_BUCKETS
    for call in served:
        bucket = bucket_for(call.batch, chosen)
        if bucket is None:
            continue
        loud = [m for c, m in call.warnings if c == NPUFallbackWarning.__name__]
        expect(call.stats.runs != 0 or not loud,
               f"{head}batch {call.batch} fell back to the CPU (NPUFallbackWarning: {loud[0] if loud else ''}; "
               f"fallbacks is {call.fallbacks}) although bucket {bucket} holds it: only a batch larger than the "
               f"largest bucket falls back. Device: {call.stats.summary()}")
        expect(call.stats.runs == 1,
               f"{head}batch {call.batch} made {call.stats.runs} NPU program run(s); each call within the "
               f"buckets is one run of its bucket's program. Device: {call.stats.summary()}")
        uploaded = call.stats.input_bytes_to_device // (spec.in_features * 4)
        expect(uploaded == bucket,
               f"{head}batch {call.batch} uploaded {uploaded} row(s) to the NPU; the smallest bucket that holds "
               f"it is {bucket}, so {bucket} row(s) should cross: the batch plus {bucket - call.batch} zero row(s).")


@CHECKS.check(stage="buckets", weight=3)
def answers_match_the_model(ctx):
    """every batch size within the buckets gives the model's own answer"""
    batches = (3, 1, 8, 5, 2, 7, 4, 6)
    expect_answers(SERVED, None, batches, serve_batches(ctx, SERVED, batches, None))


@CHECKS.check(stage="buckets", weight=3)
def one_program_per_bucket(ctx):
    """at most one NPU program per bucket, ever: repeated and new batch sizes compile nothing new"""
    batches = (3, 1, 8, 5, 2, 7, 4, 6, 3, 3, 1)
    served = serve_batches(ctx, SERVED, batches, None)
    compiled = sum(s.stats.programs_compiled for s in served)
    head = _served_text(SERVED, None, batches)
    expect(compiled <= len(DEFAULT_BUCKETS),
           f"{head}the NPU compiled {compiled} programs for {len(DEFAULT_BUCKETS)} buckets. One program per "
           f"bucket, kept and reused: the NPU's program memory holds {DEVICE.stats.max_resident_programs}.")
    refused = [error for s in served for error in s.stats.compile_errors]
    expect(not refused, f"{head}the NPU refused a compile: {refused[0] if refused else ''}")
    expect_buckets(SERVED, None, batches, served)


@CHECKS.check(stage="buckets", weight=2)
def smallest_bucket_that_fits(ctx):
    """each call runs on the smallest bucket that holds its batch (a batch equal to a bucket is not padded)"""
    batches = (1, 2, 3, 4, 5, 8)
    served = serve_batches(ctx, SERVED, batches, None)
    expect_buckets(SERVED, None, batches, served)
    expect_answers(SERVED, None, batches, served)


@CHECKS.check(stage="buckets", weight=3)
def larger_batches_fall_back_loudly(ctx):
    """a batch past the largest bucket runs on the CPU with an NPUFallbackWarning, counted in `fallbacks`"""
    batches = (3, 11, 9, 9, 2, 11)  # a batch size past the buckets, again: every fallback counts
    served = serve_batches(ctx, SERVED, batches, None)
    head = _served_text(SERVED, None, batches)
    expect_answers(SERVED, None, batches, served)
    count = 0
    for call in served:
        loud = [m for c, m in call.warnings if c == NPUFallbackWarning.__name__]
        if call.batch <= DEFAULT_BUCKETS[-1]:
            expect(not loud, f"{head}batch {call.batch} fits a bucket but warned: {loud[0] if loud else ''}")
            expect(call.fallbacks == count, f"{head}after batch {call.batch}, fallbacks is {call.fallbacks}; "
                                            f"expected {count}: only batches past the largest bucket count.")
            continue
        count += 1
        expect(call.stats.runs == 0 and call.stats.programs_compiled == 0,
               f"{head}batch {call.batch} is past the largest bucket ({DEFAULT_BUCKETS[-1]}) but the NPU "
               f"compiled or ran a program for it: {call.stats.summary()}")
        expect(loud and any(str(call.batch) in m for m in loud),
               f"{head}batch {call.batch} ran on the CPU without an NPUFallbackWarning naming the batch size "
               f"{call.batch}" + (f" (the warning said: {loud[0]})" if loud else "")
               + ". A fallback nobody hears about is an idle accelerator nobody notices.")
        expect(loud and call.fallbacks == count,
               f"{head}after batch {call.batch}, fallbacks is {call.fallbacks}"
               + ("" if loud else " and it did not warn") + f"; expected {count} and an NPUFallbackWarning (one per "
               f"call served on the CPU, a batch size seen before included: README.md, 'Buckets').")


@CHECKS.check(stage="buckets", weight=1)
def buckets_in_any_order(ctx):
    """buckets the caller gives: (6, 3) in that order still picks the smallest that fits; (4,) alone works too"""
    for buckets, batches in (((6, 3), (2, 5, 3, 6, 1, 7)), ((4,), (3, 6, 4))):
        served = serve_batches(ctx, SERVED, batches, buckets)
        expect_answers(SERVED, buckets, batches, served)
        expect_buckets(SERVED, buckets, batches, served)
        head = _served_text(SERVED, buckets, batches)
        expect(served[-1].fallbacks == 1, f"{head}after the calls, fallbacks is {served[-1].fallbacks}; expected 1: "
                                          f"one batch was past the largest bucket {max(buckets)}.")


def _bucket_plans() -> st.SearchStrategy:
    # one output tensor (no layer output also returned), as the server's contract says
    specs = mlp_specs(activations=NPU_FRIENDLY_ACTIVATIONS, reuses=("none", "residual"), max_layers=2,
                      batch_shapes=((2,),))
    buckets = st.one_of(st.none(), st.lists(st.integers(min_value=1, max_value=8), min_size=1, max_size=3,
                                            unique=True).map(tuple))
    return st.tuples(specs, buckets, batch_sequences())


@st.composite
def batch_sequences(draw) -> tuple[int, ...]:
    """Batch sizes 1 to 10, some of them repeated later (a fallback batch size again: counted again), in any order.
    Shrinks toward one batch of 1."""
    batches = draw(st.lists(st.integers(min_value=1, max_value=10), min_size=1, max_size=5))
    again = draw(st.lists(st.sampled_from(batches), max_size=3))
    return tuple(draw(st.permutations(batches + again)))


def _describe_plan(plan) -> str:
    spec, buckets, batches = plan
    return _served_text(spec, buckets, batches)


@CHECKS.check(stage="buckets", weight=3)
def random_models_and_batches(ctx):
    """random NPU-friendly MLPs, bucket sets and batch sequences: answers, buckets, programs, fallbacks"""
    def prop(plan) -> None:
        spec, buckets, batches = plan
        served = serve_batches(ctx, spec, batches, buckets)
        expect_answers(spec, buckets, batches, served)
        expect_buckets(spec, buckets, batches, served)
        chosen = buckets or DEFAULT_BUCKETS
        compiled = sum(s.stats.programs_compiled for s in served)
        expect(compiled <= len(chosen), f"{_describe_plan(plan)}the NPU compiled {compiled} programs for "
                                        f"{len(chosen)} bucket(s).")
        past = sum(1 for b in batches if bucket_for(b, chosen) is None)
        expect(served[-1].fallbacks == past, f"{_describe_plan(plan)}fallbacks is {served[-1].fallbacks} after "
                                             f"the calls; {past} call(s) were past the largest bucket (each one "
                                             f"counts, a batch size seen before too).")
        warned = sum(1 for s in served for c, _ in s.warnings if c == NPUFallbackWarning.__name__)
        expect(warned == past, f"{_describe_plan(plan)}the server raised {warned} NPUFallbackWarning(s); {past} "
                               f"call(s) were past the largest bucket, and each one warns.")

    fuzz(ctx, _bucket_plans(), prop, describe=_describe_plan, max_examples=6 if not ctx.deep else 10)


SECOND = replace(SERVED, seed=7)  # the same layer sizes, other weights


def _describe_pair(schedule) -> str:
    return f"  servers A and B, called in the order {' '.join('AB'[i] for i in schedule)}"


@CHECKS.check(stage="buckets", weight=2)
def two_servers_side_by_side(ctx):
    """two BucketedNPU, two models of the same sizes, calls interleaved: each answers with its own model's programs"""
    def prop(schedule) -> None:
        _fresh_device()
        specs = (SERVED, SECOND)
        models = [build_mlp(spec).eval() for spec in specs]
        keys = [ctx.probe(probes.serve, spec, None, True) for spec in specs]
        generator = torch.Generator().manual_seed(ctx.seed)
        head = (f"two servers side by side, A = BucketedNPU(model_a) and B = BucketedNPU(model_b), two models of the "
                f"same layer sizes and other weights, called in the order {' '.join('AB'[i] for i in schedule)}:\n")
        compiled = 0
        for index, who in enumerate(schedule, start=1):
            batch = (3, 5, 2, 7, 1, 4)[index % 6]
            x = torch.randn(batch, SERVED.in_features, generator=generator)
            with torch.no_grad():
                want, other = models[who](x), models[1 - who](x)
            DEVICE.reset()
            got = _serve_call(ctx, keys[who], x, f"{head}call {index} ({'AB'[who]}, batch {batch})")["output"]
            compiled += DEVICE.stats.programs_compiled
            expect(got is not None, f"{head}call {index} ({'AB'[who]}, batch {batch}) returned no tensor.")
            if got.shape == want.shape and torch.allclose(got, want, rtol=1.3e-6, atol=1e-5):
                continue
            mixed = got.shape == other.shape and torch.allclose(got, other, rtol=1.3e-6, atol=1e-5)
            raise CheckFailed(
                f"{head}call {index} ({'AB'[who]}, batch {batch}) "
                + (f"returned the other server's model's answer: {'AB'[who]} ran a program compiled for "
                   f"{'AB'[1 - who]}'s model. Each server keeps its own bucket -> program table, on the instance "
                   f"(self), not on the class or at module level, which every server shares. README.md, 'Buckets'."
                   if mixed else "does not give its own model's answer. README.md, 'Buckets'."))
        expect(compiled <= 2 * len(DEFAULT_BUCKETS),
               f"{head}the NPU compiled {compiled} programs for two servers of {len(DEFAULT_BUCKETS)} buckets each.")

    fuzz(ctx, instance_schedules(max_calls=8), prop, describe=_describe_pair, max_examples=2 if not ctx.deep else 5)
