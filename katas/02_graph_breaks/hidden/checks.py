"""Hidden checks for kata 2 (graph-break hunting). Learners: solve the kata from README.md, not from here.

`find_graph_breaks` runs on hidden suspects (suspects_hidden.py, and a helper module helpers_hidden.py) whose
breaking lines are annotated by hand (`# BREAK <label>: <cause>`): the expected files, lines and reasons come
from those annotations, never from the reference. Each `fixed_<suspect>` is compiled with a backend that records the
graphs it receives and counts how often they run, and is compared with the given suspect (suspects.py) run
eagerly. Everything that runs the attempt's code inside torch machinery lives in probes.py and returns data;
the checks here only compare that data with the truth.
"""
from __future__ import annotations

import contextlib
import inspect
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch
from hypothesis import strategies as st

from checker.kit import load_module
from checker.kit import CheckFailed, Checks, expect, fuzz
from katas.common.quiet import quiet
from katas.common.strategies import float_tensors, hiding_logging_settings, suspect_shapes, user_logging_settings

CHECKS = Checks()

HIDDEN_DIR = Path(__file__).resolve().parent
KATA_DIR = HIDDEN_DIR.parent
SUSPECTS = load_module(KATA_DIR / "suspects.py", "suspects")  # the name hunt.py's `import suspects` uses
HIDDEN = load_module(HIDDEN_DIR / "suspects_hidden.py", "kata02_suspects_hidden")
probes = load_module(HIDDEN_DIR / "probes.py", "kata02_graph_breaks_probes")
ANNOTATED_FILES = (HIDDEN_DIR / "suspects_hidden.py", HIDDEN_DIR / "helpers_hidden.py")
SOURCE = {path: path.read_text(encoding="utf-8").splitlines() for path in ANNOTATED_FILES}


# --- the hand-written truth ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Expected:
    label: str
    path: Path
    lineno: int
    cause: str  # the reason the lesson defines: the first line of Dynamo's reason once wrapper lines are skipped


def _annotations() -> dict[str, Expected]:
    found: dict[str, Expected] = {}
    for path, lines in SOURCE.items():
        for lineno, line in enumerate(lines, start=1):
            match = re.search(r"#\s*BREAK\s+(\w+):\s*(.+?)\s*$", line)
            if match:
                label, cause = match.groups()
                assert label not in found, f"internal: BREAK label {label!r} is used twice"
                found[label] = Expected(label, path, lineno, cause)
    return found


ANNOTATIONS = _annotations()
# The two-files case is only a test if its two breaks share a line number: keep them aligned when editing.
assert ANNOTATIONS["two_files_print"].lineno == ANNOTATIONS["helper_item"].lineno, \
    "internal: suspects_hidden.two_files and helpers_hidden.peak_scaled must break on the same line number"


def expected_breaks(case) -> list[Expected]:
    return [ANNOTATIONS[label] for label in case.breaks]


def source(path: Path, lineno: int) -> str:
    lines = SOURCE.get(path, [])
    return lines[lineno - 1].split("  # BREAK")[0].strip() if 0 < lineno <= len(lines) else "?"


def where(path: Path, lineno: int) -> str:
    return f"{path.name}:{lineno} `{source(path, lineno)}`"


def enclosing_def(path: Path, lineno: int) -> str | None:
    """The function whose `def` is on `lineno`, if any (a finder that reports where a frame starts)."""
    lines = SOURCE.get(path, [])
    match = re.match(r"\s*def (\w+)", lines[lineno - 1]) if 0 < lineno <= len(lines) else None
    return match.group(1) if match else None


# --- the finder's answers --------------------------------------------------------------------------------

def call_text(case) -> str:
    shown = [type(a).__name__ if isinstance(a, torch.nn.Module) else "tensor" for a in case.make_args()]
    shown += [f"{key}={value!r}" for key, value in case.make_kwargs().items()]
    return f"find_graph_breaks({case.name}({', '.join(shown)}))"


@dataclass(frozen=True)
class Found:
    filename: str
    lineno: int
    reason: str

    @property
    def path(self) -> Path | None:
        """The annotated file this entry names, if it names one: by the full path exactly as Dynamo prints it (the
        code object's co_filename; the checks load the hidden files by their resolved paths)."""
        return next((p for p in ANNOTATED_FILES if str(p) == self.filename), None)

    @property
    def same_file(self) -> Path | None:
        """The annotated file this entry's filename resolves to, however it is written (for messages)."""
        with contextlib.suppress(OSError, ValueError):
            resolved = Path(self.filename).resolve()
            return next((p for p in ANNOTATED_FILES if p == resolved), None)
        return None


def run_finder(ctx, case_name: str, before: str = "reset") -> list[Found]:
    """The attempt's answer for one hidden case, checked for shape (a list of GraphBreak-like records).
    before: see probes.probe_find ("reset": each check sees the finder on its own)."""
    case = HIDDEN.CASES[case_name]
    return found_in(ctx.probe(probes.probe_find, case_name, before), call_text(case))


def found_in(got: dict, call: str) -> list[Found]:
    """probes.answer()'s data as Found records, or a failure saying what the finder returned instead."""
    expect(got["type"] == "list", f"{call} returned {got['type']}; expected a list of GraphBreak")
    found = []
    for item in got["items"]:
        expect(item["filename"] is not None and item["lineno"] is not None and item["reason"] is not None,
               f"{call} returned {item['repr']} in its list; expected GraphBreak(filename: str, lineno: int, "
               f"reason: str)")
        found.append(Found(item["filename"], item["lineno"], item["reason"]))
    return found


def listing(found: list[Found]) -> str:
    if not found:
        return "    []"
    return "\n".join(f"    {Path(f.filename).name}:{f.lineno}  {f.reason[:90]!r}" for f in found)


def config_note(ctx) -> str:
    """A note for a finder check that failed while Dynamo's config is not at its defaults (the attempt changed it
    at import): breaks that would happen then don't, and the finder is not to blame."""
    changed = ctx.probe(probes.probe_dynamo_config)["changed"]
    if not changed:
        return ""
    return (f"\nLook at your module first: torch._dynamo.config is not at its defaults "
            f"({', '.join(f'{k} = {v}' for k, v in list(changed.items())[:3])}), so Dynamo no longer breaks where it "
            f"would for a user who imports hunt.py. Nothing in hunt.py may change Dynamo's config: a fix rewrites "
            f"the code instead (see `leaves_dynamo_config_alone`).")


def expect_lines(ctx, case_name: str) -> list[Found]:
    """The attempt reports exactly the annotated (file, line) pairs of `case_name`, in order, once each."""
    case = HIDDEN.CASES[case_name]
    found = run_finder(ctx, case_name)
    want = [(e.path, e.lineno) for e in expected_breaks(case)]
    note = f"\nWhy this case: {case.note}." if case.note else ""
    try:
        return judge_lines(found, want, call_text(case), note)
    except CheckFailed as exc:
        raise CheckFailed(f"{exc}{config_note(ctx)}") from None


def judge_lines(found: list[Found], want: list[tuple[Path, int]], call: str, note: str = "") -> list[Found]:
    """`found` names exactly the (file, line) pairs `want`, in order, once each; else a failure saying how not."""
    wrong_file = [f for f in found if f.path is None]
    if wrong_file:
        same = wrong_file[0].same_file
        printed = str(same) if same is not None else str(HIDDEN_DIR / 'suspects_hidden.py')
        raise CheckFailed(
            f"{call} reported filename {wrong_file[0].filename!r}; Dynamo's header names {printed!r}. Report the "
            f"file exactly as Dynamo prints it in 'Graph break in user code at FILE:LINE' (the code object's "
            f"co_filename, a full path), unchanged.\nYou returned:\n{listing(found)}")
    got = [(f.path, f.lineno) for f in found]
    if got == want:
        return found
    expected_text = "\n".join(f"    {where(p, n)}" for p, n in want) or "    (no breaks)"
    head = f"{call} returned\n{listing(found)}\nexpected, in this order:\n{expected_text}\n"
    starts = [(p, n) for p, n in got if (p, n) not in want and enclosing_def(p, n)]
    if starts:
        path, lineno = starts[0]
        raise CheckFailed(head + f"Line {lineno} is `{source(path, lineno)}`, the first line of the function, not "
                                 f"the line that broke: report the innermost user frame Dynamo names in 'Graph "
                                 f"break in user code at FILE:LINE'." + note)
    if len(set(got)) < len(got) and list(dict.fromkeys(got)) == want:
        raise CheckFailed(head + "Every line is there but some more than once: Dynamo reports a line again when "
                                 "it re-traces the same code (a helper's own frame, a resumed frame, a second call). "
                                 "List each line once, where it first appears." + note)
    if sorted(got, key=str) == sorted(want, key=str):
        files = list(dict.fromkeys(p for p, _ in want))
        grouped = sorted(want, key=lambda pn: files.index(pn[0])) == got and len(files) > 1
        raise CheckFailed(head + "The right lines in the wrong order: list breaks in the order Dynamo reports "
                                 "them while the function runs, which is execution order, not line order"
                          + (" and not grouped by file: here the breaks alternate between two files."
                             if grouped else ".") + note)
    missing = [(p, n) for p, n in want if (p, n) not in got]
    if missing:
        path, lineno = missing[0]
        twin = next((p for p, n in got if n == lineno and p != path), None)
        if twin is not None:
            raise CheckFailed(head + f"Line {lineno} of {path.name} is missing, and you did report line {lineno} of "
                                     f"{twin.name}: a break is a (filename, lineno) pair, and two files can break "
                                     f"on the same line number. Tell lines apart by file and line together." + note)
        raise CheckFailed(head + f"Line {lineno} of {path.name} is missing from your list." + note)
    path, lineno = next((p, n) for p, n in got if (p, n) not in want)
    raise CheckFailed(head + f"Line {lineno} of {path.name} (`{source(path, lineno)}`) does not break the graph."
                      + note)


def expect_reasons(ctx, case_name: str, found: list[Found] | None = None) -> None:
    """Each annotated break of `case_name` has the reason the lesson defines: the first line of Dynamo's reason
    once wrapper lines are skipped, as annotated."""
    case = HIDDEN.CASES[case_name]
    found = run_finder(ctx, case_name) if found is None else found
    call = call_text(case)
    for want in expected_breaks(case):
        mine = [f for f in found if f.lineno == want.lineno and f.path == want.path]
        expect(mine, f"{call} reported no break at {where(want.path, want.lineno)}, so its reason cannot be "
                     f"checked: find the line first.\nYou returned:\n{listing(found)}")
        expect_cause(call, f"{want.path.name}:{want.lineno} `{source(want.path, want.lineno)}`", mine[0].reason,
                     want.cause, f"\nWhy this case: {case.note}." if case.note else "")


def expect_cause(call: str, place: str, reason: str, cause: str, note: str = "") -> None:
    """`reason` is `cause` (surrounding blanks aside), or a failure saying how it differs."""
    if reason.strip() == cause:
        return
    text = reason.strip()
    if not text or "\n" in text:
        why = "expected one line, the cause's first line, not the whole report."
    elif text.endswith(":"):
        why = ("your line is one of Dynamo's wrappers (a one-line paragraph ending in ':'); skip every wrapper "
               "and take the first line of the paragraph after them.")
    elif cause in text:
        why = "it holds the cause but more besides: the reason is exactly the cause's first line."
    elif "twice" in note:
        why = ("Dynamo reported this line more than once, with different reasons; the entry keeps the reason of the "
               "first report (one entry per location, as Dynamo first reports it), not a later one.")
    else:
        why = ("the reason is the first line of the text after 'Graph Break Reason:' once the wrapper lines "
               "(one-line paragraphs ending in ':') are skipped, not a line from elsewhere in the report.")
    raise CheckFailed(f"{call}: the reason for {place} is {text[:200]!r}; expected {cause!r}: {why}{note}")


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
    "each reason is the cause's first line, as Dynamo words it"
    for name in SIMPLE_CASES:
        expect_reasons(ctx, name)


@CHECKS.check(stage="reasons", weight=1)
def module_forward(ctx):
    "an nn.Module: the break inside forward, and in a hook the module runs"
    for name in ("GatedUnit", "HookedScale"):
        expect_reasons(ctx, name, expect_lines(ctx, name))


@CHECKS.check(stage="reasons", weight=1)
def runs_fn_once(ctx):
    "fn runs exactly once (its side effects happen once), with a break and without one"
    for name in ("counted", "counted_no_break"):
        case = HIDDEN.CASES[name]
        call = call_text(case)
        seen = ctx.probe(probes.probe_runs, name)
        judge_lines(found_in(seen["answer"], call), [(e.path, e.lineno) for e in expected_breaks(case)], call,
                    f"\nWhy this case: {case.note}.")
        kind = "breaks once" if case.breaks else "has no break"
        expect(seen["runs"] == 1,
               f"{call}: the function {kind} and appends to a list each time it runs, and during your finder's call "
               f"it ran {seen['runs']} times; expected exactly once. Your finder runs fn once, under torch.compile, "
               f"and reads every break from that one run, also when that run reports none: don't run it again "
               f"(eagerly, or through torch._dynamo.explain to cross-check), since a user's function may have side "
               f"effects.")


@CHECKS.check(stage="reasons", weight=1)
def passes_keyword_arguments(ctx):
    "keyword arguments reach the function"
    expect_reasons(ctx, "keyword_gate", expect_lines(ctx, "keyword_gate"))


LINKED_TAIL = f"{os.sep}real{os.sep}..{os.sep}linked{os.sep}helpers_hidden.py"


@CHECKS.check(stage="reasons", weight=1)
def filename_as_dynamo_prints_it(ctx):
    "a module imported through a symlinked folder: the file exactly as Dynamo prints it"
    seen = ctx.probe(probes.probe_find_linked)
    printed = seen["co_filename"]
    expect(printed.endswith(LINKED_TAIL), f"internal: the helper was loaded from {printed!r}")
    call = "find_graph_breaks(peak_scaled(tensor))"
    found = found_in(seen["answer"], call)
    want = ANNOTATIONS["helper_item"]
    head = (f"{call}, where peak_scaled's module was imported by the path {printed!r} (`linked` is a symlink to "
            f"another folder), returned\n{listing(found)}\n")
    expect(len(found) == 1 and found[0].lineno == want.lineno,
           head + f"expected one break, line {want.lineno} `{source(want.path, want.lineno)}`.")
    expect(found[0].filename == printed,
           head + f"Its filename is {found[0].filename!r}, but Dynamo's header says {printed!r}. Report the file "
                  f"exactly as the header prints it (the code object's co_filename): don't resolve symlinks or "
                  f"normalise the path (os.path.realpath, Path.resolve, os.path.normpath, abspath, Path(...)).")
    expect_cause(call, f"helpers_hidden.py:{want.lineno} `{source(want.path, want.lineno)}`", found[0].reason,
                 want.cause)


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
    "a line Dynamo reports twice is listed once, with the first report's reason"
    expect_lines(ctx, "same_helper_twice")
    expect_reasons(ctx, "item_then_print", expect_lines(ctx, "item_then_print"))


def interleaved_steps() -> st.SearchStrategy[tuple[str, ...]]:
    """3 or 4 distinct steps of HIDDEN.STEPS (one break each) taken from suspects_hidden.py and helpers_hidden.py in
    turn, so that the breaks alternate between the two files (a finder that groups by file reorders them)."""
    mine = [n for n, f in HIDDEN.STEP_FILES.items() if f == "suspects_hidden.py"]
    theirs = [n for n, f in HIDDEN.STEP_FILES.items() if f == "helpers_hidden.py"]

    def alternate(first_mine: bool, count: int) -> st.SearchStrategy:
        a, b = (mine, theirs) if first_mine else (theirs, mine)
        return st.tuples(st.permutations(a), st.permutations(b)).map(
            lambda ab: tuple(ab[i % 2][i // 2] for i in range(count)))

    return st.tuples(st.booleans(), st.integers(min_value=3, max_value=4)).flatmap(lambda fc: alternate(*fc))


@CHECKS.check(stage="order", weight=2)
def breaks_in_two_files_in_order(ctx):
    "breaks that alternate between two files, in execution order"

    def in_order(steps: tuple[str, ...]) -> None:
        want = [ANNOTATIONS[name] for name in steps]
        call = f"find_graph_breaks(chain(tensor, {', '.join(steps)}))"
        found = found_in(ctx.probe(probes.probe_find_chain, steps, torch.tensor([0.5, -1.0, 2.0])), call)
        note = (f"\nWhy this case: chain calls {', '.join(steps)} in that order, each breaking once, alternately in "
                f"suspects_hidden.py and helpers_hidden.py.")
        try:
            judge_lines(found, [(e.path, e.lineno) for e in want], call, note)
        except CheckFailed as exc:
            raise CheckFailed(f"{exc}{config_note(ctx)}") from None
        for brk, expected in zip(found, want):
            expect_cause(call, where(expected.path, expected.lineno), brk.reason, expected.cause)

    in_order(("step_print", "step_tolist", "step_item"))
    fuzz(ctx, interleaved_steps(), in_order, describe=lambda steps: f"steps = {steps}",
         max_examples=3 if ctx.deep else 1)


@CHECKS.check(stage="order", weight=2)
def same_line_in_two_files(ctx):
    "the same line number in two files: two breaks"
    expect_reasons(ctx, "two_files", expect_lines(ctx, "two_files"))
    # Two files with the same name in different folders are two files: a location's file is the full path.
    seen = ctx.probe(probes.probe_find_same_name)
    first, second = seen["co_filenames"]
    call = "find_graph_breaks(chain(tensor, peak_scaled, peak_scaled))"
    found = found_in(seen["answer"], call)
    want = ANNOTATIONS["helper_item"]
    got = [(f.filename, f.lineno) for f in found]
    if got == [(first, want.lineno), (second, want.lineno)]:
        return
    shown = "\n".join(f"    {f.filename}:{f.lineno}" for f in found) or "    []"
    head = (f"{call} calls peak_scaled from two modules with the same file name in different folders, first\n"
            f"    {first}\nthen\n    {second}\nand both break on line {want.lineno} "
            f"`{source(want.path, want.lineno)}`. Your finder returned\n{shown}\nexpected those two, in that order.\n")
    names = {os.path.basename(name) for name, _ in got}
    if len(found) == 1 and names == {"helpers_hidden.py"}:
        raise CheckFailed(head + "Two files with the same name in different folders are two files: a location is the "
                                 "pair (filename, lineno) with the filename the full path Dynamo prints. Tell "
                                 "locations apart by that whole path and the line, not by the file's base name.")
    raise CheckFailed(head + "Each break's filename is the full path in Dynamo's header 'Graph break in user code at "
                             "FILE:LINE', unchanged, and two different files are two locations.")


# --- stage: state ----------------------------------------------------------------------------------------

@CHECKS.check(stage="state", weight=2)
def resets_dynamo_first(ctx):
    "finds the breaks even after the function was compiled before, and twice in a row"
    case = HIDDEN.CASES["two_kinds"]
    want = [e.lineno for e in expected_breaks(case)]
    got = [f.lineno for f in run_finder(ctx, "two_kinds")]
    expect(got == want, f"{call_text(case)} returned lines {got} on a fresh start; expected {want}. Make "
                        f"`several_breaks_in_execution_order` pass first: this check needs a finder that is right "
                        f"when nothing was compiled before.")
    for before, when in (("compiled", "after the checks compiled two_kinds themselves"),
                         ("nothing", "when called a second time")):
        got = [f.lineno for f in run_finder(ctx, "two_kinds", before)]
        expect(got == want,
               f"{call_text(case)} {when} returned lines {got}; expected {want}. Dynamo keeps compiled code for a "
               f"function until torch._dynamo.reset(): without a reset the cached code runs, nothing is traced, and "
               f"nothing is reported. Reset at the start of every call.")


def _level(value: int) -> str:
    return f"{value} ({logging.getLevelName(value)})"


def _short(entry: str) -> str:
    """A handler or filter as the snapshot describes it, by class name only (`_DropAll@0x7f...` -> `_DropAll`)."""
    return entry.split("@")[0].split("(")[0]


def _list_change(was: list, now: list) -> str:
    """What was added to and removed from a list of handlers, filters or warnings filters, by class name."""
    added = [_short(v) for v in now if v not in was]
    removed = [_short(v) for v in was if v not in now]
    parts = ([f"{len(added)} added: {', '.join(added[:4])}{', …' if len(added) > 4 else ''}"] if added else []) + \
            ([f"{len(removed)} removed: {', '.join(removed[:4])}{', …' if len(removed) > 4 else ''}"] if removed else [])
    return "; ".join(parts) or "reordered"


def logging_changes(before: dict, after: dict) -> list[str]:
    """What differs between two probes.logging_snapshot()s, in words: torch._logging's settings first, then the
    graph-break loggers, then the rest; torch's handlers replaced wholesale (set_logs' mark) as one line; lists
    (handlers, filters, warnings filters) as what was added and removed."""
    changes: list[tuple[int, str]] = []
    replaced = []
    if before["torch_logs"] != after["torch_logs"]:
        changes.append((0, f"torch._logging's own settings (what TORCH_LOGS / set_logs switched on): were "
                           f"{before['torch_logs']}, now {after['torch_logs']}"))
    if before["disable"] != after["disable"]:
        changes.append((0, f"logging.disable(...) threshold: was {_level(before['disable'])}, now "
                           f"{_level(after['disable'])}"))
    if before.get("warnings") != after.get("warnings"):
        was, now = before.get("warnings", []), after.get("warnings", [])
        added, removed = [w for w in now if w not in was], [w for w in was if w not in now]
        parts = ([f"{len(added)} added: {', '.join(added[:2])}"] if added else []) + \
                ([f"{len(removed)} removed: {', '.join(removed[:2])}"] if removed else [])
        changes.append((0, f"Python's warnings filters (warnings.filters): {'; '.join(parts) or 'reordered'}"))
    for name, was in before["loggers"].items():
        now = after["loggers"].get(name)
        if now is None:
            continue
        rank = 1 if "__graph_breaks" in name or "__recompiles" in name else 2
        for field in ("level", "propagate", "disabled", "handlers", "filters"):
            if was[field] == now[field]:
                continue
            if field == "handlers" and len(was[field]) == len(now[field]) and not set(was[field]) & set(now[field]):
                replaced.append(name)
                continue
            if field in ("handlers", "filters"):
                changes.append((rank, f"logger {name!r}: {field}: {_list_change(was[field], now[field])}"))
            else:
                shown = _level if field == "level" else repr
                changes.append((rank, f"logger {name!r}: {field} was {shown(was[field])}, now {shown(now[field])}"))
    if replaced:
        changes.append((1 if len(replaced) > 2 else 2,
                        f"the handlers of {len(replaced)} logger(s) ({', '.join(replaced[:3])}"
                        f"{', …' if len(replaced) > 3 else ''}) were replaced by new ones"
                        + (": torch._logging.set_logs does that" if len(replaced) > 2 else "")))
    return [text for _, text in sorted(changes, key=lambda change: change[0])]


HOW_TO_RESTORE = (
    "Remember each value before you change it (level, propagate, disabled) and put exactly that back in a "
    "`finally:` block; remove only the handler or filter you added; change warnings filters only inside "
    "`warnings.catch_warnings()`. Not with torch._logging.set_logs: it resets every setting you don't pass and "
    "replaces torch's own handlers.")


def expect_logging_kept(ctx, case_name: str, intro: str, advice: str = "", settings: dict | None = None,
                        raises: bool = False) -> dict:
    seen = ctx.probe(probes.probe_logging, case_name, settings, raises)
    changes = logging_changes(seen["before"], seen["after"])
    if changes:
        shown = "\n".join(f"  - {c[:300]}" for c in changes[:4])
        more = f"\n  ({len(changes)} differences in all)" if len(changes) > 4 else ""
        let_out = f" (your finder let out {seen['raised']})" if seen.get("raised") else ""
        raise CheckFailed(f"{intro.replace('{let_out}', let_out)}\n{shown}{more}\nLater compiles in the process would "
                          f"log differently. {advice}{HOW_TO_RESTORE}")
    return seen


STATE_CASE = "explicit_break"
RAISING_CASE = "breaks_then_raises"


@CHECKS.check(stage="state", weight=1)
def leaves_logging_as_found(ctx):
    "leaves torch's logging and the warnings filters exactly as it found them"
    expect_logging_kept(ctx, STATE_CASE, f"{call_text(HIDDEN.CASES[STATE_CASE])} changed torch's logging:")


_ROLE_NAMES = {"graph_breaks": "the graph-break loggers", "trace": "torch.__trace",
               "hint": "torch._dynamo.variables.tensor", "dynamo": "torch._dynamo"}


WARNING_FILTER_TEXT = {
    "own": "filterwarnings('always', message=\"a user's own warnings filter\", category=UserWarning)",
    "ignore_torch": "filterwarnings('ignore', module=r'torch\\.')",
    "ignore_all": "simplefilter('ignore')",
    "ignore_user_warnings": "filterwarnings('ignore', category=UserWarning)",
}


def _user_settings(hiding: bool) -> st.SearchStrategy[dict]:
    """A user's logging state as katas.common.strategies draws it (user_logging_settings, or
    hiding_logging_settings), with three more axes: a logger's handlers are 1 to 3 of probes.USER_HANDLER_KINDS
    (a class of their own, logging.NullHandler, logging.StreamHandler) where the user has any; the user's
    warnings filters are 0 to 3 of
    probes.WARNING_FILTER_KINDS in any order (the filters a finder might add itself among them), and, for a hiding
    user, the hiding may be on torch.__trace instead of (or as well as) the graph-break loggers: a level above
    DEBUG, `disabled`, a filter dropping every record (first or last of their filters)."""

    @st.composite
    def draw_settings(draw) -> dict:
        where = draw(st.sampled_from(("graph_breaks", "trace", "both"))) if hiding else "none"
        base = draw(hiding_logging_settings() if where in ("graph_breaks", "both") else user_logging_settings())
        loggers = {role: dict(tweaks) for role, tweaks in base["loggers"].items()}
        if where in ("trace", "both"):
            trace = loggers["trace"]
            hide = draw(st.sets(st.sampled_from(("drop_filter", "disabled", "level")), min_size=1, max_size=3))
            trace["drop_filter"] = draw(st.sampled_from(("first", "last"))) if "drop_filter" in hide else None
            trace["disabled"] = trace["disabled"] or "disabled" in hide
            if "level" in hide:
                trace["level"] = draw(st.sampled_from((20, 30, 40, 50)))
        for tweaks in loggers.values():  # a user's handlers may be standard ones too (a NullHandler first of all)
            if tweaks["handler"]:
                tweaks["handler"] = tuple(draw(st.lists(st.sampled_from(tuple(probes.USER_HANDLER_KINDS)),
                                                        unique=True, min_size=1, max_size=3)))
        kinds = draw(st.lists(st.sampled_from(tuple(probes.WARNING_FILTER_KINDS)), unique=True, max_size=3))
        return {**base, "loggers": loggers, "warnings_filter": tuple(kinds)}

    return draw_settings()


HANDLER_TEXT = {"own": "one of their own class", "null": "logging.NullHandler()",
                "stream": "logging.StreamHandler(...)"}


def describe_user(settings: dict) -> str:
    """A user's logging settings (katas.common.strategies.user_logging_settings, hiding_logging_settings) in
    words."""
    on = [name for name, value in settings["set_logs"].items() if value]
    parts = [f"set_logs({', '.join(f'{n}=True' for n in on)})" if on else "no set_logs switches"]
    for role, tweaks in settings["loggers"].items():
        made = ([f"level {tweaks['level']}"] if tweaks["level"] is not None else []) + \
               ([f"propagate={tweaks['propagate']}"] if tweaks["propagate"] is not None else []) + \
               (["disabled=True"] if tweaks["disabled"] else []) + \
               ([f"handlers: {', '.join(HANDLER_TEXT[k] for k in probes.handler_kinds(tweaks))}"]
                if probes.handler_kinds(tweaks) else []) + \
               (["a filter"] if tweaks["filter"] else []) + \
               ([f"a filter dropping every record ({tweaks['drop_filter']} of their filters)"]
                if tweaks.get("drop_filter") else [])
        if made:
            parts.append(f"{_ROLE_NAMES[role]}: {', '.join(made)}")
    kinds = probes.warning_filter_kinds(settings)
    if kinds:
        parts.append("warnings filters of their own, front first: " + ", ".join(WARNING_FILTER_TEXT[k] for k in kinds))
    if len(parts) == 1 and not on:
        return "torch's default logging, nothing changed"
    return "; ".join(parts)


@CHECKS.check(stage="state", weight=1)
def keeps_users_logging_settings(ctx):
    "a user's own logging settings survive the call"
    call = call_text(HIDDEN.CASES[STATE_CASE])

    def kept(settings: dict) -> None:
        expect_logging_kept(ctx, STATE_CASE, f"Before the call, logging was: {describe_user(settings)}. "
                                             f"{call} changed that:",
                            "Put back each value exactly as you read it before changing it (`logger.level`, not "
                            "`getEffectiveLevel()`: a logger at NOTSET reports its parent's level there; not torch's "
                            "defaults). Remove the very handler or filter object you added, not every one of its "
                            "class: the user may have a logging.NullHandler() of their own on the same logger. ",
                            settings=settings)

    kept(probes.USER_EVERYTHING)
    kept(probes.USER_EVERYTHING_ELSE)
    kept(probes.USER_NOTSET)
    fuzz(ctx, _user_settings(hiding=False), kept, describe=describe_user, max_examples=3 if ctx.deep else 1)


@CHECKS.check(stage="state", weight=2)
def finds_breaks_past_users_settings(ctx):
    "a user's logging settings that would hide the reports hide none of them, and stay as they were"
    case = HIDDEN.CASES[STATE_CASE]
    call = call_text(case)
    want = [(e.path, e.lineno) for e in expected_breaks(case)]

    def finds(settings: dict) -> None:
        seen = ctx.probe(probes.probe_logging, STATE_CASE, settings)
        found = found_in(seen["answer"], call)
        try:
            judge_lines(found, want, call)
        except CheckFailed as exc:
            raise CheckFailed(
                f"Before the call, logging was: {describe_user(settings)}.\n{exc}\nThe user's settings hid the "
                f"reports from your finder. While it collects, it must get past them on every logger it collects "
                f"from: each graph-break logger, or torch.__trace if you collect the structured trace there. On "
                f"that logger itself: a level above DEBUG (set DEBUG on the logger itself, not on a parent), "
                f"`disabled = True` (set it False), a filter of theirs that drops records (a logger runs its "
                f"filters in order, before any handler: put a collecting filter first with "
                f"`logger.filters.insert(0, f)`, so a handler of your own, even with propagate=False, comes too "
                f"late). Then put every value back.") from None
        changes = logging_changes(seen["before"], seen["after"])
        expect(not changes, f"Before the call, logging was: {describe_user(settings)}. {call} found the breaks but "
                            f"changed that:\n" + "\n".join(f"  - {c[:300]}" for c in changes[:4])
                            + f"\n{HOW_TO_RESTORE}")

    finds(probes.USER_HIDING)
    fuzz(ctx, _user_settings(hiding=True), finds, describe=describe_user, max_examples=4 if ctx.deep else 1)


@CHECKS.check(stage="state", weight=1)
def restores_logging_when_fn_raises(ctx):
    "logging is restored when the function raises"
    expect_logging_kept(
        ctx, RAISING_CASE,
        f"{call_text(HIDDEN.CASES[RAISING_CASE])}: the function raises ValueError after its break{{let_out}}, and "
        f"afterwards torch's logging is not as it was:",
        "The restoring must run when fn raises too. ", raises=True)


# --- stage: fixes ----------------------------------------------------------------------------------------

def why_it_breaks(text: str) -> str:
    lowered = text.lower()
    if "disable" in lowered:
        return ("torch.compiler.disable does not remove a break, it makes one: the disabled call runs in eager "
                "between two graphs, and with fullgraph=True that is an error.")
    if "data-dependent" in lowered or "data dependent" in lowered:
        return ("a Python `if` (or while, or bool()) on a tensor's value needs that value, which exists only when "
                "the code runs; compute without branching (torch.where, clamp, masks), or put both branches in the "
                "graph with torch.cond, so one graph fits every input.")
    if "item()" in lowered or "tolist" in lowered:
        return "Python numbers leave the graph; keep the values as tensors."
    if "dynamic shape" in lowered:
        return "an op whose output size depends on the data (nonzero, boolean indexing) cannot be traced with fixed shapes."
    return "rewrite the line Dynamo names so there is nothing left for it to break on."


def clone(args: tuple) -> tuple:
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def expect_fix_exists(ctx, name: str, args: tuple) -> None:
    """fixed_<name> exists, is not torch.compiler.disable'd, and runs in eager (so an unfinished or crashing
    fix reads as such, at the attempt's own line)."""
    seen = ctx.probe(probes.probe_fix, name, clone(args), "eager")
    expect(not seen["missing"], f"hunt.py has no function fixed_{name}; write it (same arguments as suspects.{name}).")
    expect(not seen["disabled"],
           f"fixed_{name} is wrapped in torch.compiler.disable, which tells Dynamo to run it in eager, outside any "
           f"graph: called from compiled code it is a graph break of its own. (torch.compile(fixed_{name}) unwraps "
           f"it and traces the code inside, breaks included.) Remove the decorator and rewrite the code instead.")


def compile_one_graph(ctx, name: str, args: tuple, shown: str, more: tuple = ()) -> Any:
    """torch.compile(fixed, fullgraph=True) gives one graph that ran and holds visible ops; returns the probe's
    data (its "output", and with `more` the outputs of the same compiled function on those inputs)."""
    call = f"torch.compile(fixed_{name}, fullgraph=True)({shown})"
    seen = ctx.probe(probes.probe_fix, name, clone(args), "fullgraph", tuple(clone(extra) for extra in more))
    error = seen["error"]
    if error is not None and error["type"] == "TorchRuntimeError":
        raise CheckFailed(f"{call} raised {error['type']}{error['where']}: {error['first_line']}\n"
                          f"This is not a graph break: the function's code fails on these inputs. A fix takes every "
                          f"input the suspect takes (x of 1 to 3 dimensions, thresholds and coeffs 1-D: see 'Inputs "
                          f"the checks use'); call fixed_{name} eagerly on the inputs below to see why.")
    if error is not None:
        raise CheckFailed(f"{call} raised {error['type']}{error['where']}: {error['first_line']}\n"
                          f"With fullgraph=True any graph break is an error. {why_it_breaks(error['text'])}"
                          f"{config_note(ctx)}")
    graphs = seen["graphs"]
    expect(graphs == 1, f"{call} handed {graphs} graphs to the backend; expected exactly one. "
                        + ("Zero graphs means Dynamo never traced the function: it ran in eager." if not graphs else ""))
    expect(seen["runs"] == 1, f"{call}: the compiled graph did not run for this call, so the result came from "
                              f"eager Python, not from the graph.")
    expect(seen["ops"][0], f"{call}: the graph has no op nodes, so the function's work happens outside it.")
    if seen["opaque"] is not None:
        raise CheckFailed(f"{call}: the graph calls {seen['opaque']}, which hides the function's ops from the "
                          f"compiler (allow_in_graph or a custom op puts one opaque call in the graph). Write the "
                          f"computation with torch ops so they appear in the graph.")
    return seen


def expect_no_break_without_fullgraph(ctx, name: str, args: tuple, shown: str) -> None:
    seen = ctx.probe(probes.probe_fix, name, clone(args), "plain")
    if seen["error"] is None and seen["graphs"] == 1:
        return
    breaks = [tuple(b) for b in seen["breaks"]]
    detail = "".join(f"\n    {file}:{line}  {reason}" for file, line, reason in breaks)
    item = any("item()" in reason for _, _, reason in breaks)
    raise CheckFailed(
        f"torch.compile(fixed_{name})({shown}) without fullgraph made {seen['graphs']} graphs, so the "
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


def _chatty_inputs() -> st.SearchStrategy:
    return st.tuples(dims(), dims(), dims(), dims()).flatmap(lambda d: st.tuples(
        float_tensors((d[0], d[1])), float_tensors((d[1], d[2])), float_tensors((d[2], d[3]))))


def _residual_inputs() -> st.SearchStrategy:
    return st.tuples(dims(), dims()).flatmap(lambda d: st.tuples(float_tensors((d[0], d[1])), float_tensors((d[1], d[1]))))


T = torch.tensor
# Shapes, as the lesson states them: every x is a float32 tensor of 1 to 3 dimensions (suspect_shapes), thresholds
# and coeffs are 1-D; the edges put a matrix x in front of every fix that reduces over x's elements.
FIXES = (
    FixSpec("scale_by_peak", st.tuples(float_tensors(suspect_shapes())),
            (lambda: (torch.zeros(3),), lambda: (T([[-4.0, 2.0], [0.5, 1.0]]),))),
    FixSpec("chatty_mlp", _chatty_inputs(), ()),
    FixSpec("clamp_norm", st.tuples(float_tensors(suspect_shapes())),
            (lambda: (torch.zeros(3),), lambda: (T([0.3, 0.4]),), lambda: (T([[0.6, 0.0], [0.0, 0.9]]),),
             lambda: (T([1.0]),))),
    FixSpec("horner", st.tuples(float_tensors(suspect_shapes()), float_tensors(st.tuples(dims(1, 5)))),
            (lambda: (T([1.0, 2.0]), T([3.0])), lambda: (T([[2.0, -1.0], [0.5, 3.0]]), T([1.0, -2.0, 0.5])))),
    FixSpec("standardize", st.tuples(float_tensors(suspect_shapes(min_numel=2))),
            (lambda: (T([[1.0, 2.0], [3.0, 5.0]]),),)),
    FixSpec("residual_tanh", _residual_inputs(), ()),
    FixSpec("positive_mean", st.tuples(float_tensors(suspect_shapes())),
            (lambda: (T([-1.0, -2.0]),), lambda: (T([[-1.0, 2.0, 4.0], [-2.0, -2.0, 3.0]]),),
             lambda: (torch.zeros(2, 2),))),
    FixSpec("count_above", st.tuples(float_tensors(suspect_shapes()), float_tensors(st.tuples(dims(1, 4)))),
            (lambda: (T([0.5, -0.5]), T([10.0])),
             lambda: (T([[0.5, -0.5, 2.0], [1.5, 0.0, -1.0]]), T([-10.0, 0.0, 1.0])))),
)
FIX_SPECS = {spec.name: spec for spec in FIXES}


@contextlib.contextmanager
def precise_printing():
    """Tensors printed at 8 decimals inside: at torch's default 4, 1.0 and 0.999984 both read 1.0000, and a
    learner would see two equal tensors called "not close"."""
    saved = torch._tensor_str.PRINT_OPTS.precision
    torch.set_printoptions(precision=8)
    try:
        yield
    finally:
        torch.set_printoptions(precision=saved)


def describe_args(name: str, args: tuple) -> str:
    params = list(inspect.signature(getattr(SUSPECTS, name)).parameters)
    return "\n".join(f"{p} = {a!r}" for p, a in zip(params, args))


def check_fix(ctx, spec: FixSpec) -> None:
    name = spec.name
    suspect = getattr(SUSPECTS, name)
    args = SUSPECTS.example_inputs(name)
    shown = ", ".join("tensor" for _ in args)
    expect_fix_exists(ctx, name, args)
    compile_one_graph(ctx, name, args, shown)
    expect_no_break_without_fullgraph(ctx, name, args, shown)

    def same_as_suspect(examples: tuple) -> None:
        """One torch.compile(fixed, fullgraph=True), called on each example in turn (same shapes): each output is
        the suspect's on that input, and the inputs are unchanged afterwards."""
        seen = compile_one_graph(ctx, name, examples[0], shown, examples[1:])
        outputs = [seen["output"], *seen.get("more_outputs", [])]
        for k, (example, got, after) in enumerate(zip(examples, outputs, seen["inputs_after"])):
            with quiet():
                want = suspect(*clone(example))
            which = ("" if k == 0 else
                     f"called a {'second' if k == 1 else 'third'} time, on new inputs of the same shape (compiled once, "
                     f"as a model's forward is: one compiled fix must serve every input, so nothing may be baked in "
                     f"at compile time, e.g. by torch._dynamo.assume_constant_result), ")
            try:
                torch.testing.assert_close(got, want, equal_nan=True)
            except AssertionError as exc:
                details = "\n".join(f"  {line.strip()}" for line in str(exc).strip().splitlines() if line.strip())
                with precise_printing():
                    message = (f"the graph of fixed_{name}, {which}returned\n{got!r}\nbut suspects.{name} returns"
                               f"\n{want!r}\non the same inputs: a fix must not change what the function computes "
                               f"(torch.testing.assert_close):\n{details}\n\nInputs:\n{describe_args(name, example)}")
                raise CheckFailed(message) from None
            changed = [p for p, a, b in zip(inspect.signature(suspect).parameters, example, after)
                       if isinstance(a, torch.Tensor) and not torch.equal(a, b)]
            if changed:
                raise CheckFailed(
                    f"torch.compile(fixed_{name}, fullgraph=True)({shown}) changed its input {changed[0]}: before "
                    f"the call\n{example[list(inspect.signature(suspect).parameters).index(changed[0])]!r}\n"
                    f"afterwards\n{after[list(inspect.signature(suspect).parameters).index(changed[0])]!r}\nThe "
                    f"suspect leaves its arguments as they were, and so must a fix: the caller still holds that "
                    f"tensor. Compute into new tensors (`x = x - mean`, not `x -= mean`; no `out=` or `_` methods on "
                    f"an argument).")

    for make_edge in spec.edges:
        example = make_edge()
        other = (example[0] * -3.0 + 0.25, *example[1:])
        same_as_suspect((example, other))
    fuzz(ctx, same_shape_pairs(spec.inputs), same_as_suspect,
         describe=lambda pair: "\n-- then --\n".join(describe_args(name, ex) for ex in pair),
         max_examples=max(4, ctx.max_examples // 3))


def same_shape_pairs(inputs: st.SearchStrategy) -> st.SearchStrategy:
    """Two argument tuples with the same shapes: one drawn from `inputs`, the other new values of the same shapes
    (a compiled fix is called on both)."""
    return inputs.flatmap(lambda ex: st.tuples(st.just(ex), st.tuples(*[float_tensors(tuple(a.shape)) for a in ex])))


@CHECKS.check(stage="fixes", weight=1)
def leaves_dynamo_config_alone(ctx):
    "importing hunt.py leaves every key of torch._dynamo.config at its default"
    changed = ctx.probe(probes.probe_dynamo_config, True)["changed"]
    expect(not changed,
           "After importing hunt.py (and running the checks before this one), torch._dynamo.config differs from its "
           "defaults:\n" + "\n".join(f"  - {k} = {v}" for k, v in changed.items()) +
           "\nA config change applies to every compile in the process, not to your fixes alone: a user who imports "
           "hunt.py would find Dynamo behaving differently everywhere, and the checks compile your fixes with every "
           "key at its default. That includes what Dynamo's own hints suggest (reorderable_logging_functions, "
           "ignore_logging_functions, capture_scalar_outputs): rewrite the code instead.")


# One check per suspect, in the order of FIXES.
FIX_TITLE = "one graph holding its ops, same output as the suspect"


@CHECKS.check(stage="fixes", weight=2, name=f"fixed_scale_by_peak: {FIX_TITLE}")
def fixed_scale_by_peak(ctx):
    check_fix(ctx, FIX_SPECS["scale_by_peak"])


@CHECKS.check(stage="fixes", weight=2, name=f"fixed_chatty_mlp: {FIX_TITLE}")
def fixed_chatty_mlp(ctx):
    check_fix(ctx, FIX_SPECS["chatty_mlp"])


@CHECKS.check(stage="fixes", weight=2, name=f"fixed_clamp_norm: {FIX_TITLE}")
def fixed_clamp_norm(ctx):
    check_fix(ctx, FIX_SPECS["clamp_norm"])


@CHECKS.check(stage="fixes", weight=2, name=f"fixed_horner: {FIX_TITLE}")
def fixed_horner(ctx):
    check_fix(ctx, FIX_SPECS["horner"])


@CHECKS.check(stage="fixes", weight=2, name=f"fixed_standardize: {FIX_TITLE}")
def fixed_standardize(ctx):
    check_fix(ctx, FIX_SPECS["standardize"])


@CHECKS.check(stage="fixes", weight=2, name=f"fixed_residual_tanh: {FIX_TITLE}")
def fixed_residual_tanh(ctx):
    check_fix(ctx, FIX_SPECS["residual_tanh"])


@CHECKS.check(stage="fixes", weight=2, name=f"fixed_positive_mean: {FIX_TITLE}")
def fixed_positive_mean(ctx):
    check_fix(ctx, FIX_SPECS["positive_mean"])


@CHECKS.check(stage="fixes", weight=2, name=f"fixed_count_above: {FIX_TITLE}")
def fixed_count_above(ctx):
    check_fix(ctx, FIX_SPECS["count_above"])
