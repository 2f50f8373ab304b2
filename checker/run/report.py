"""Turn a KataResult into what a person reads: grouped by stage, failures explained, one next step."""
from __future__ import annotations

import os
import re
import sys
import textwrap
from pathlib import Path

from checker.core.manifest import Kata, display_path
from checker.run.runner import CheckResult, KataResult

MAX_MESSAGE_LINES = 14
MAX_MESSAGE_CHARS = 1200
FAILED = ("fail", "error", "timeout")
MARKS = {"pass": "✓", "fail": "✗", "error": "✗", "not_implemented": "·", "timeout": "⧗", "not_run": "-"}
STATUS_WORDS = {
    "pass": "pass — every check passes",
    "fail": "fail",
    "not_started": "not_started — nothing implemented yet",
    "error": "error",
    "timeout": "timeout",
}


def use_colour(stream=sys.stdout) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def terminal_columns(stream=sys.stdout) -> int | None:
    """The terminal's width when `stream` is one (messages are wrapped to it), else None (left as they are)."""
    import shutil

    return shutil.get_terminal_size().columns if stream.isatty() else None


class _Style:
    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.on else text


def cap(message: str, lines: int = MAX_MESSAGE_LINES, chars: int = MAX_MESSAGE_CHARS) -> str:
    """Trim a learner-facing message to a readable size, saying that it was trimmed."""
    text = message.strip()
    trimmed = False
    if len(text) > chars:
        text, trimmed = text[:chars].rstrip(), True
    rows = text.splitlines()
    if len(rows) > lines:
        rows, trimmed = rows[:lines], True
    if trimmed:
        rows.append("… (trimmed; --verbose shows everything)")
    return "\n".join(rows)


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def _check_line(check: CheckResult, style: _Style) -> str:
    """A check's mark, points and name (points first: names run from 20 to 190 characters); a failing one also
    shows its id, which `--check ID` runs alone."""
    colour = {"pass": "32", "fail": "31", "error": "31", "timeout": "33"}.get(check.status, "2")
    points = f"{check.weight if check.status == 'pass' else 0}/{check.weight}"
    line = f"  {style(MARKS[check.status], colour)} {points:>5}  {check.name}"
    return line + style(f"  [{check.id}]", "2") if check.status in FAILED else line


_RAISED = re.compile(r"raised (?P<type>\w+)(?P<where> at [^\s:]+:\d+(?: in \S+\(\))?)?: (?P<text>.*)$")
_STOPPED = re.compile(r"^stopped: .* of CPU time in this check without finishing, at (?P<where>[^\s:]+:\d+ in \S+\(\))")


def _same_error(message: str) -> str | None:
    """What a message says the attempt raised, or None: "KeyError at fusion.py:8 in f()" when it names the line
    (the same line raising on two graphs is one mistake, whatever the graphs), else the type and its text. A check
    stopped at its time limit at a line counts the same way ("a time-out at loop.py:2 in f()")."""
    first = (message.strip().splitlines() or [""])[0]
    stopped = _STOPPED.search(first)
    if stopped:
        return f"a time-out at {stopped['where']}"
    found = _RAISED.search(first)
    if not found:
        return None
    return found["type"] + (found["where"] if found["where"] else f": {found['text']}")


def _wrap(text: str, columns: int | None) -> str:
    """Wrap each line at word boundaries to `columns` (None: leave lines as they are), keeping its indentation."""
    if not columns:
        return text
    out = []
    for line in text.splitlines():
        indent = line[:len(line) - len(line.lstrip())]
        out.append(textwrap.fill(line, columns, initial_indent="", subsequent_indent=indent,
                                 break_long_words=False, break_on_hyphens=False) if len(line) > columns else line)
    return "\n".join(out)


def check_block(check: CheckResult, style: "_Style", *, shown_errors: dict[str, CheckResult], verbose: bool,
                columns: int | None) -> list[str]:
    """A finished check as the report shows it: its line, then for a failure its message (or, for an exception
    already shown for another check, one line naming that check; `shown_errors` collects them)."""
    out = [_check_line(check, style)]
    if check.status in ("pass", "not_run"):
        return out
    error = _same_error(check.message) if not verbose else None
    if error and error in shown_errors:
        said = error if error.startswith("a time-out") else f"raised {error}"
        return out + [_wrap(f"      the same error as [{shown_errors[error].id}] above: {said}"[:300], columns)]
    if error:
        shown_errors[error] = check
    if check.message:
        out.append(_wrap(_indent(cap(check.message) if not verbose else check.message, "      "), columns))
    if verbose and check.detail:
        out.append(_indent(check.detail.rstrip(), "      | "))
    if verbose and check.output.strip():
        out.append(_indent("your code printed:\n" + check.output.rstrip(), "      > "))
    return out


def render_text(kata: Kata, result: KataResult, *, verbose: bool = False, colour: bool = False,
                columns: int | None = None, shown: frozenset[str] = frozenset(), compact: bool = False) -> str:
    """The report a person reads; `columns` (a terminal's width) wraps messages at word boundaries. `shown`: ids
    of failing checks whose messages a live report already printed above (checker/run/live.py); they get their line
    only here, so nothing is said twice. `compact` (`make watch`, to fit one screen): a stage whose checks all
    pass is one line."""
    style = _Style(colour)
    out = [style(f"Kata {kata.number} · {kata.title}", "1"), f"attempt: {display_path(result.attempt)}"]
    if kata.builds_on:
        out.append(f"with: {uses_line(kata, result.attempt)}")
    out.append("")
    if result.status == "error" and all(c.status == "not_run" for c in result.checks):
        out += [style("No check could run:", "31"), _indent(cap(result.message), "  ")]
        if verbose and result.detail:
            out += ["", _indent(result.detail, "  | ")]
        out += ["", f"score: 0/{result.max_score}   status: {STATUS_WORDS['error']}",
                "Fix the line above and run the kata again."]
        return "\n".join(out)
    quiet_not_started = result.status == "not_started" and not verbose
    shown_errors: dict[str, CheckResult] = {}  # what the attempt raised -> the first check that said so
    for stage in kata.stages:
        checks = [c for c in result.checks if c.stage == stage]
        if not checks:
            continue
        if compact and all(c.status == "pass" for c in checks):
            points = sum(c.weight for c in checks)
            out.append(f"{style(stage, '1;34')}  {style(MARKS['pass'], '32')} all {len(checks)} checks "
                       f"({points}/{points})")
            continue
        out.append(style(stage, "1;34"))
        for check in checks:
            if quiet_not_started or (check.id in shown and check.status in FAILED):
                out.append(_check_line(check, style))
                continue
            out += check_block(check, style, shown_errors=shown_errors, verbose=verbose, columns=columns)
    out.append("")
    if result.message:
        out.append(style(_wrap(cap(result.message), columns), "33"))
    out.append(f"score: {result.score}/{result.max_score}   status: "
               + style(STATUS_WORDS[result.status], "32" if result.status == "pass" else "31"))
    if verbose and result.timings:
        out.append(style(time_line(result), "2"))
    out.append(_wrap(next_step(kata, result), columns))
    return "\n".join(out)


PHASE_WORDS = {"start": "start", "imports": "import torch", "worker": "start worker", "load_checks": "load checks",
               "load_reference": "load reference", "import_attempt": "import attempt", "checks": "run checks"}


def time_line(result: KataResult, slowest: int = 3) -> str:
    """Where the run's time went: each phase (the slowest shard's), and the slowest checks."""
    timings = dict(result.timings)
    total = timings.pop("total", result.duration_s)
    phases = ", ".join(f"{PHASE_WORDS.get(name, name)} {seconds:.2f}" for name, seconds in timings.items())
    how = "forked by the warm server" if result.start == "warm" else "cold start"
    ran = sorted((c for c in result.checks if c.seconds), key=lambda c: -c.seconds)[:slowest]
    checks = ", ".join(f"{c.id} {c.seconds:.2f}" for c in ran)
    return (f"time: {total:.2f} s ({how}): {phases} s" + (f"; slowest checks: {checks} s" if checks else ""))


def uses_line(kata: Kata, attempt: str | Path) -> str:
    """The earlier katas' files this attempt runs with (katas/common/learner.py decides which), for the header."""
    from checker.core.manifest import get_kata
    from katas.common.learner import earlier_kata_file

    files = [earlier_kata_file(attempt, k.slug, k.module) for k in map(get_kata, kata.builds_on)]
    return ", ".join(display_path(f) for f in files)


def builds_on_sentence(kata: Kata) -> str:
    """' This kata uses your files of katas 3 and 4 ...', or '' for a kata that stands alone."""
    if not kata.builds_on:
        return ""
    from checker.core.manifest import get_kata

    earlier = [get_kata(n) for n in kata.builds_on]
    names = " and ".join(str(k.number) for k in earlier)
    files = ", ".join(display_path(k.stub_path) for k in earlier)
    return (f" This kata runs your own files of katas {names} ({files}): pass those first "
            f"(`make kata N={earlier[0].number}`).")


def next_step(kata: Kata, result: KataResult) -> str:
    """One sentence telling the learner what to do now."""
    stub = display_path(kata.stub_path)
    if result.status == "pass":
        return f"Well done. Compare with the reference: `make diff N={kata.number}`; then go on to the next kata."
    if result.status == "not_started":
        first = result.checks[0].message.split(": ", 1)[0] if result.checks else ""
        return (f"Start here: read {display_path(kata.lesson_path)}, then replace the NotImplementedError stubs in "
                f"{stub} ({first.replace('not implemented yet ', '').strip('()')}). Stuck? `make hint N={kata.number}`."
                + builds_on_sentence(kata))
    if result.status == "timeout":
        return ("Your code was still running when the time limit ended: look for a loop that never ends, or code "
                "that waits (the message above says which).")
    first_failing = next((c for c in result.checks if c.status not in ("pass", "not_run")), None)
    if first_failing is None:
        return f"Re-run with --verbose for the full output; stuck? `make hint N={kata.number}`."
    return (f"Next: make '{first_failing.name}' pass (stage {first_failing.stage}; alone: "
            f"`make kata N={kata.number} ARGS=\"--check {first_failing.id}\"`). --verbose shows tracebacks; "
            f"`make graph N={kata.number}` draws your graphs beside the reference's; stuck? `make hint N={kata.number}`.")
