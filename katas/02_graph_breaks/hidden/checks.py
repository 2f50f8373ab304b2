"""Hidden checks for kata 2 (graph-break hunting). Learners: solve the kata from README.md, not from here.

`find_graph_breaks` runs on hidden suspects (suspects_hidden.py) whose breaking lines are annotated by
hand (`# BREAK <label>: <keyword>`): the expected lines come from those annotations, never from the
reference. Each `fixed_<suspect>` is compiled with a backend that records the graphs it receives and
counts how often they run, and is compared with the given suspect (suspects.py) run eagerly.
"""
from __future__ import annotations

import contextlib
import inspect
import logging
import re
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch
import torch._dynamo
from hypothesis import strategies as st

from checker.child import load_module
from katas.common.quiet import quiet
from checker.kit import Checks, CheckFailed, expect, fuzz
from katas.common.strategies import float_tensors

CHECKS = Checks()

KATA_DIR = Path(__file__).resolve().parent.parent
HIDDEN_PATH = Path(__file__).resolve().parent / "suspects_hidden.py"
SUSPECTS = load_module(KATA_DIR / "suspects.py", "suspects")  # the name hunt.py's `import suspects` uses
HIDDEN = load_module(HIDDEN_PATH, "kata02_suspects_hidden")
HIDDEN_LINES = HIDDEN_PATH.read_text(encoding="utf-8").splitlines()


# --- the hand-written truth ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Expected:
    label: str
    lineno: int
    keyword: str


def _annotations() -> dict[str, Expected]:
    found: dict[str, Expected] = {}
    for lineno, line in enumerate(HIDDEN_LINES, start=1):
        match = re.search(r"#\s*BREAK\s+(\w+):\s*(.+?)\s*$", line)
        if match:
            label, keyword = match.groups()
            assert label not in found, f"internal: BREAK label {label!r} is used twice in {HIDDEN_PATH.name}"
            found[label] = Expected(label, lineno, keyword)
    return found


ANNOTATIONS = _annotations()


def expected_breaks(case) -> list[Expected]:
    return [ANNOTATIONS[label] for label in case.breaks]


def source(lineno: int) -> str:
    return HIDDEN_LINES[lineno - 1].split("  # BREAK")[0].strip() if 0 < lineno <= len(HIDDEN_LINES) else "?"


def where(lineno: int) -> str:
    return f"{HIDDEN_PATH.name}:{lineno} `{source(lineno)}`"


def enclosing_def(lineno: int) -> str | None:
    """The function whose `def` is on `lineno`, if any (a finder that reports where a frame starts)."""
    match = re.match(r"\s*def (\w+)", HIDDEN_LINES[lineno - 1]) if 0 < lineno <= len(HIDDEN_LINES) else None
    return match.group(1) if match else None


# --- running attempt code quietly ------------------------------------------------------------------------

def call_text(name: str, args: tuple) -> str:
    shown = ", ".join(type(a).__name__ if isinstance(a, torch.nn.Module) else "tensor" for a in args)
    return f"{name}({shown})"


@dataclass(frozen=True)
class Found:
    filename: str
    lineno: int
    reason: str


def run_finder(ctx, case, *, fresh: bool = True) -> list[Found]:
    """The attempt's answer for one hidden case, checked for shape (a list of GraphBreak-like records).

    fresh: reset Dynamo before calling, so each check sees the finder on its own; whether the finder
    copes with code compiled before is a check of its own (resets_dynamo_first).
    """
    args = case.make_args()
    if fresh:
        torch._dynamo.reset()
    with quiet():
        result = ctx.attempt.find_graph_breaks(case.fn, *args)
    call = f"find_graph_breaks({call_text(case.name, args)})"
    expect(isinstance(result, list), f"{call} returned {type(result).__name__}; expected a list of GraphBreak")
    found = []
    for item in result:
        fields = {name: getattr(item, name, None) for name in ("filename", "lineno", "reason")}
        expect(isinstance(fields["filename"], str) and isinstance(fields["lineno"], int)
               and isinstance(fields["reason"], str),
               f"{call} returned {item!r} in its list; expected GraphBreak(filename: str, lineno: int, reason: str)")
        found.append(Found(fields["filename"], fields["lineno"], fields["reason"]))
    return found


def same_file(filename: str) -> bool:
    with contextlib.suppress(OSError):
        return Path(filename).resolve() == HIDDEN_PATH
    return False


def listing(found: list[Found]) -> str:
    if not found:
        return "[]"
    return "\n".join(f"    {Path(f.filename).name}:{f.lineno}  {f.reason[:90]!r}" for f in found)


def expect_lines(ctx, case_name: str) -> list[Found]:
    """The attempt reports exactly the annotated lines of `case_name`, in order, once each."""
    case = HIDDEN.CASES[case_name]
    found = run_finder(ctx, case)
    want = expected_breaks(case)
    call = f"find_graph_breaks({call_text(case.name, case.make_args())})"
    note = f"\nWhy this case: {case.note}." if case.note else ""
    wrong_file = [f for f in found if not same_file(f.filename)]
    if wrong_file:
        raise CheckFailed(
            f"{call} reported filename {wrong_file[0].filename!r}; the function lives in {HIDDEN_PATH}. Report the "
            f"file Dynamo names in 'Graph break in user code at FILE:LINE' (the code object's co_filename, a full "
            f"path).\nYou returned:\n{listing(found)}")
    got_lines = [f.lineno for f in found]
    want_lines = [e.lineno for e in want]
    if got_lines == want_lines:
        return found
    expected_text = "\n".join(f"    {where(e.lineno)}" for e in want) or "    (no breaks)"
    head = f"{call} returned\n{listing(found)}\nexpected, in this order:\n{expected_text}\n"
    starts = [n for n in got_lines if n not in want_lines and enclosing_def(n)]
    if starts:
        raise CheckFailed(head + f"Line {starts[0]} is `{source(starts[0])}`, the first line of the function, "
                                 f"not the line that broke: report the innermost user frame Dynamo names in "
                                 f"'Graph break in user code at FILE:LINE'." + note)
    if len(set(got_lines)) < len(got_lines) and list(dict.fromkeys(got_lines)) == want_lines:
        raise CheckFailed(head + "Every line is there but some more than once: Dynamo reports a line again when "
                                 "it re-traces the same code (a helper's own frame, a resumed frame, a second call). "
                                 "List each line once, where it first appears." + note)
    if sorted(got_lines) == sorted(want_lines):
        raise CheckFailed(head + "The right lines in the wrong order: list breaks in the order Dynamo reports "
                                 "them while the function runs, which is execution order, not line order." + note)
    missing = [e for e in want if e.lineno not in got_lines]
    if missing:
        raise CheckFailed(head + f"Line {missing[0].lineno} is missing from your list." + note)
    extra = [n for n in got_lines if n not in want_lines]
    raise CheckFailed(head + f"Line {extra[0]} (`{source(extra[0])}`) does not break the graph." + note)


def expect_reasons(ctx, case_name: str, found: list[Found] | None = None) -> None:
    """Each annotated break of `case_name` has a one-line reason containing its keyword."""
    case = HIDDEN.CASES[case_name]
    found = run_finder(ctx, case) if found is None else found
    call = f"find_graph_breaks({call_text(case.name, case.make_args())})"
    for want in expected_breaks(case):
        mine = [f for f in found if f.lineno == want.lineno and same_file(f.filename)]
        expect(mine, f"{call} reported no break at {where(want.lineno)}, so its reason cannot be checked: "
                     f"find the line first.\nYou returned:\n{listing(found)}")
        reason = mine[0].reason
        expect(reason.strip() and "\n" not in reason.strip(),
               f"{call}: the reason for line {want.lineno} is {reason[:300]!r}; expected one line, the first line of "
               f"Dynamo's reason (its type of break), not the whole report.")
        expect(want.keyword.lower() in reason.lower(),
               f"{call}: the reason for {where(want.lineno)} is {reason!r}; Dynamo's cause for this break mentions "
               f"{want.keyword!r}. If your line is a wrapper such as 'Encountered graph break when attempting to "
               f"trace CALL ...:' or 'Failed to handle graph break gracefully ...:', the cause is the first line "
               f"of the paragraph after it.")


# --- stage: reasons --------------------------------------------------------------------------------------

SIMPLE_CASES = ("norm_ratio", "pick_branch", "nonzero_rows", "float_tolist", "logs_midway", "calls_disabled",
                "explicit_break")


@CHECKS.check(stage="reasons", weight=3)
def reports_file_and_line(ctx):
    "one break after some ops: the right file and line"
    for name in SIMPLE_CASES:
        expect_lines(ctx, name)


@CHECKS.check(stage="reasons", weight=2)
def reason_is_dynamos_cause(ctx):
    "each reason is one line naming Dynamo's cause"
    for name in SIMPLE_CASES:
        expect_reasons(ctx, name)


@CHECKS.check(stage="reasons", weight=1)
def module_forward(ctx):
    "an nn.Module: the break inside forward"
    expect_reasons(ctx, "GatedUnit", expect_lines(ctx, "GatedUnit"))


# --- stage: blind_spots ----------------------------------------------------------------------------------

@CHECKS.check(stage="blind_spots", weight=2)
def break_before_any_op(ctx):
    "a break before any op (explain() misses it)"
    for name in ("warns_first", "random_first"):
        expect_reasons(ctx, name, expect_lines(ctx, name))


@CHECKS.check(stage="blind_spots", weight=3)
def frame_falls_back_entirely(ctx):
    "a frame that falls back to eager entirely (explain() reports -1 breaks)"
    for name in ("prints_in_loop", "prints_in_with", "item_in_while"):
        expect_reasons(ctx, name, expect_lines(ctx, name))


@CHECKS.check(stage="blind_spots", weight=2)
def break_inside_helper(ctx):
    "a break inside a called helper: the helper's line"
    expect_lines(ctx, "calls_a_chatty_helper")


@CHECKS.check(stage="blind_spots", weight=1)
def no_break_no_report(ctx):
    "a function captured whole: an empty list"
    expect_lines(ctx, "no_breaks")


# --- stage: order ----------------------------------------------------------------------------------------

@CHECKS.check(stage="order", weight=3)
def several_breaks_in_execution_order(ctx):
    "several breaks, in execution order"
    for name in ("two_kinds", "branch_then_mask", "three_kinds", "helper_then_item"):
        expect_reasons(ctx, name, expect_lines(ctx, name))


@CHECKS.check(stage="order", weight=2)
def one_entry_per_line(ctx):
    "a line Dynamo reports twice is listed once"
    expect_lines(ctx, "same_helper_twice")


# --- stage: state ----------------------------------------------------------------------------------------

@CHECKS.check(stage="state", weight=2)
def resets_dynamo_first(ctx):
    "finds the breaks even after the function was compiled before, and twice in a row"
    case = HIDDEN.CASES["two_kinds"]
    want = [e.lineno for e in expected_breaks(case)]
    got = [f.lineno for f in run_finder(ctx, case)]
    expect(got == want, f"find_graph_breaks(two_kinds(tensor)) returned lines {got} on a fresh start; expected "
                        f"{want}. Make `several_breaks_in_execution_order` pass first: this check needs a finder "
                        f"that is right when nothing was compiled before.")
    with quiet():
        torch._dynamo.reset()
        torch.compile(case.fn, backend="eager")(*case.make_args())
    for attempt in ("after the checks compiled two_kinds themselves", "when called a second time"):
        got = [f.lineno for f in run_finder(ctx, case, fresh=False)]
        expect(got == want,
               f"find_graph_breaks(two_kinds(tensor)) {attempt} returned lines {got}; expected {want}. Dynamo "
               f"keeps compiled code for a function until torch._dynamo.reset(): without a reset the cached code "
               f"runs, nothing is traced, and nothing is reported. Reset at the start of every call.")


def _graph_break_logger_state() -> dict[str, tuple[bool, tuple]]:
    loggers = [name for name in list(logging.root.manager.loggerDict) if name.endswith(".__graph_breaks")]
    assert loggers, "internal: this torch build has no graph_breaks artifact loggers"
    return {name: (logging.getLogger(name).isEnabledFor(logging.DEBUG), tuple(logging.getLogger(name).handlers))
            for name in loggers}


LOGGING_BEFORE_ANY_ATTEMPT_CODE = _graph_break_logger_state()


@CHECKS.check(stage="state", weight=1)
def leaves_logging_as_found(ctx):
    "leaves torch's graph-break logging as it found it"
    run_finder(ctx, HIDDEN.CASES["explicit_break"])  # earlier checks ran the finder too: compare with the start
    after = _graph_break_logger_state()
    for name, (enabled, handlers) in after.items():
        was_enabled, had_handlers = LOGGING_BEFORE_ANY_ATTEMPT_CODE.get(name, (False, ()))
        expect(enabled == was_enabled,
               f"after find_graph_breaks, logger {name!r} is {'on' if enabled else 'off'} for graph-break reports "
               f"(it was {'on' if was_enabled else 'off'}): every later torch.compile would "
               f"{'print its graph breaks' if enabled else 'stay silent'}. Restore it when you are done "
               f"(torch._logging.set_logs() with no arguments resets torch's logging; or undo what you set).")
        expect(handlers == had_handlers,
               f"after find_graph_breaks, logger {name!r} has handlers {list(handlers)} (it had {list(had_handlers)}): "
               f"remove the handler you added, or it keeps collecting reports forever.")


# --- stage: fixes ----------------------------------------------------------------------------------------

class GraphRecorder:
    """A torch.compile backend: keeps every graph it receives and counts how often one runs."""

    def __init__(self) -> None:
        self.graphs: list[torch.fx.GraphModule] = []
        self.runs = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        self.graphs.append(gm)

        def run(*args):
            self.runs += 1
            return gm.forward(*args)

        return run


def op_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]


def node_text(node: torch.fx.Node) -> str:
    target = node.target
    name = target if isinstance(target, str) else getattr(target, "__name__", str(target))
    return f"{node.name} ({node.op} {name})"


def opaque_node(gm: torch.fx.GraphModule) -> torch.fx.Node | None:
    """A node that hides ops from the compiler: a Python function of yours put in the graph whole
    (torch._dynamo.allow_in_graph), or a custom op; the compiler sees one call, not the ops inside."""
    for node in op_nodes(gm):
        target = node.target
        if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
            if target.namespace not in ("aten", "prims"):
                return node
        elif isinstance(target, types.FunctionType) and not (target.__module__ or "").startswith("torch"):
            return node
    return None


def dynamo_location(exc: BaseException, attempt_file: str | None) -> str:
    stack = getattr(exc, "real_stack", None) or []
    mine = [f for f in stack if attempt_file and Path(f.filename).resolve() == Path(attempt_file).resolve()]
    return f" at {Path(mine[-1].filename).name}:{mine[-1].lineno} `{(mine[-1].line or '').strip()}`" if mine else ""


def why_it_breaks(text: str) -> str:
    lowered = text.lower()
    if "disable" in lowered:
        return ("torch.compiler.disable does not remove a break, it makes one: the disabled call runs in eager "
                "between two graphs, and with fullgraph=True that is an error.")
    if "data-dependent" in lowered or "data dependent" in lowered:
        return ("a Python `if` (or while, or bool()) on a tensor's value needs that value, which exists only when "
                "the code runs; compute without branching (torch.where, clamp, masks) so one graph fits every input.")
    if "item()" in lowered or "tolist" in lowered:
        return "Python numbers leave the graph; keep the values as tensors."
    if "dynamic shape" in lowered:
        return "an op whose output size depends on the data (nonzero, boolean indexing) cannot be traced with fixed shapes."
    return "rewrite the line Dynamo names so there is nothing left for it to break on."


# Config flags that make Dynamo capture more: a fix must not depend on them (they change every compile in the
# process), so the checks compile with their defaults whatever the attempt set.
DEFAULT_CAPTURE_CONFIG = {"capture_scalar_outputs": False, "capture_dynamic_output_shape_ops": False}


def compile_and_run(fn: Callable, args: tuple, *, fullgraph: bool) -> tuple[GraphRecorder, Any]:
    torch._dynamo.reset()
    recorder = GraphRecorder()
    with quiet(), torch._dynamo.config.patch(**DEFAULT_CAPTURE_CONFIG):
        out = torch.compile(fn, backend=recorder, fullgraph=fullgraph)(*clone(args))
    return recorder, out


def clone(args: tuple) -> tuple:
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def compile_one_graph(ctx, name: str, fixed: Callable, args: tuple, shown: str) -> Any:
    """torch.compile(fixed, fullgraph=True) gives one graph that ran and holds visible ops; returns its output."""
    call = f"torch.compile(fixed_{name}, fullgraph=True)({shown})"
    try:
        recorder, out = compile_and_run(fixed, args, fullgraph=True)
    except torch._dynamo.exc.TorchDynamoException as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CheckFailed(f"{call} raised {type(exc).__name__}{dynamo_location(exc, ctx.attempt.__file__)}: {first}\n"
                          f"With fullgraph=True any graph break is an error. {why_it_breaks(str(exc))}") from None
    expect(len(recorder.graphs) == 1,
           f"{call} handed {len(recorder.graphs)} graphs to the backend; expected exactly one. "
           + ("Zero graphs means Dynamo never traced the function: it ran in eager." if not recorder.graphs else ""))
    gm = recorder.graphs[0]
    expect(recorder.runs == 1, f"{call}: the compiled graph did not run for this call, so the result came from "
                               f"eager Python, not from the graph.")
    expect(op_nodes(gm), f"{call}: the graph has no op nodes, so the function's work happens outside it.")
    hidden = opaque_node(gm)
    if hidden is not None:
        raise CheckFailed(f"{call}: the graph calls {node_text(hidden)}, which hides the function's ops from the "
                          f"compiler (allow_in_graph or a custom op puts one opaque call in the graph). Write the "
                          f"computation with torch ops so they appear in the graph.")
    return out


def expect_no_break_without_fullgraph(ctx, name: str, fixed: Callable, args: tuple, shown: str) -> None:
    recorder, _ = compile_and_run(fixed, args, fullgraph=False)
    if len(recorder.graphs) == 1:
        return
    breaks = []
    with contextlib.suppress(Exception), quiet():  # the reference's finder only names the lines for the message
        breaks = ctx.reference.find_graph_breaks(fixed, *clone(args))
    detail = "".join(f"\n    {Path(b.filename).name}:{b.lineno}  {b.reason}" for b in breaks)
    item = any("item()" in b.reason for b in breaks)
    raise CheckFailed(
        f"torch.compile(fixed_{name})({shown}) without fullgraph made {len(recorder.graphs)} graphs, so the "
        f"function still breaks when compiled the usual way{':' + detail if detail else '.'}\n"
        + ("fullgraph=True accepted it because Dynamo captures `.item()` as a symbolic number when it must make one "
           "graph; plain torch.compile still breaks there. Keep the value a tensor." if item else
           "A fix must give one graph with and without fullgraph=True."))


@dataclass(frozen=True)
class FixSpec:
    name: str
    inputs: st.SearchStrategy  # tuples of arguments
    edges: tuple[Callable[[], tuple], ...]  # inputs that take every branch, run before the random ones


def dims(lo: int = 1, hi: int = 4) -> st.SearchStrategy[int]:
    return st.integers(min_value=lo, max_value=hi)


def any_shape() -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(dims(1, 4), min_size=1, max_size=3).map(tuple)


def _chatty_inputs() -> st.SearchStrategy:
    return st.tuples(dims(), dims(), dims(), dims()).flatmap(lambda d: st.tuples(
        float_tensors((d[0], d[1])), float_tensors((d[1], d[2])), float_tensors((d[2], d[3]))))


def _residual_inputs() -> st.SearchStrategy:
    return st.tuples(dims(), dims()).flatmap(lambda d: st.tuples(float_tensors((d[0], d[1])), float_tensors((d[1], d[1]))))


T = torch.tensor
FIXES = (
    FixSpec("scale_by_peak", st.tuples(float_tensors(any_shape())), (lambda: (torch.zeros(3),), lambda: (T([-4.0, 2.0]),))),
    FixSpec("chatty_mlp", _chatty_inputs(), ()),
    FixSpec("clamp_norm", st.tuples(float_tensors(any_shape())),
            (lambda: (torch.zeros(3),), lambda: (T([0.3, 0.4]),), lambda: (T([3.0, 4.0]),), lambda: (T([1.0]),))),
    FixSpec("horner", st.tuples(float_tensors(st.tuples(dims(1, 5))), float_tensors(st.tuples(dims(1, 5)))),
            (lambda: (T([1.0, 2.0]), T([3.0])), lambda: (T([2.0, -1.0]), T([1.0, -2.0, 0.5])))),
    FixSpec("standardize", st.tuples(float_tensors(st.tuples(dims(2, 6)))), (lambda: (T([1.0, 2.0, 3.0, 4.0]),),)),
    FixSpec("residual_tanh", _residual_inputs(), ()),
    FixSpec("positive_mean", st.tuples(float_tensors(any_shape())),
            (lambda: (T([-1.0, -2.0]),), lambda: (T([-1.0, 2.0, 4.0]),), lambda: (torch.zeros(2, 2),))),
    FixSpec("count_above", st.tuples(float_tensors(st.tuples(dims(1, 6))), float_tensors(st.tuples(dims(1, 4)))),
            (lambda: (T([0.5, -0.5]), T([10.0])), lambda: (T([0.5, -0.5, 2.0]), T([-10.0, 0.0, 1.0])))),
)


def describe_args(name: str, args: tuple) -> str:
    params = list(inspect.signature(getattr(SUSPECTS, name)).parameters)
    return "\n".join(f"{p} = {a!r}" for p, a in zip(params, args))


def check_fix(ctx, spec: FixSpec) -> None:
    name = spec.name
    suspect = getattr(SUSPECTS, name)
    fixed = getattr(ctx.attempt, f"fixed_{name}", None)
    expect(callable(fixed), f"hunt.py has no function fixed_{name}; write it (same arguments as suspects.{name}).")
    expect(not getattr(fixed, "_torchdynamo_disable", False),
           f"fixed_{name} is wrapped in torch.compiler.disable, which tells Dynamo to run it in eager, outside any "
           f"graph: called from compiled code it is a graph break of its own. (torch.compile(fixed_{name}) unwraps "
           f"it and traces the code inside, breaks included.) Remove the decorator and rewrite the code instead.")
    args = SUSPECTS.example_inputs(name)
    shown = ", ".join("tensor" for _ in args)
    with quiet():
        fixed(*clone(args))  # in eager first, so an unfinished or crashing fix reads as such
    compile_one_graph(ctx, name, fixed, args, shown)
    expect_no_break_without_fullgraph(ctx, name, fixed, args, shown)

    def same_as_suspect(example: tuple) -> None:
        with quiet():
            want = suspect(*clone(example))
        got = compile_one_graph(ctx, name, fixed, example, shown)
        try:
            torch.testing.assert_close(got, want, equal_nan=True)
        except AssertionError as exc:
            raise CheckFailed(f"the graph of fixed_{name} returned\n{got!r}\nbut suspects.{name} returns\n{want!r}\n"
                              f"on the same inputs: a fix must not change what the function computes.\n"
                              f"({str(exc).strip().splitlines()[0]})") from None

    for make_edge in spec.edges:
        example = make_edge()
        try:
            same_as_suspect(example)
        except CheckFailed as exc:
            raise CheckFailed(f"{exc}\n\nInputs:\n{describe_args(name, example)}") from None
    fuzz(ctx, spec.inputs, same_as_suspect, describe=lambda ex: describe_args(name, ex),
         max_examples=max(6, ctx.max_examples // 3))


def _register_fix_check(spec: FixSpec) -> None:
    def check(ctx):
        check_fix(ctx, spec)

    check.__name__ = f"fixed_{spec.name}"
    CHECKS.check(stage="fixes", weight=2,
                 name=f"fixed_{spec.name}: one graph holding its ops, same output as the suspect")(check)


for _spec in FIXES:
    _register_fix_check(_spec)
