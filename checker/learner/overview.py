"""`python -m checker all` (`make progress`): every kata's status, score and hints, and one progress bar.

Katas run in parallel child processes. A kata whose file, checks, reference and shared code are unchanged since
its last recorded run reuses that run (the fingerprint in the progress file); `--fresh` re-runs everything.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from checker.core.manifest import Kata, display_path, load_katas
from checker.core.stubs import remember_pristine
from checker.learner.hints import HintError, load_hints
from checker.learner.progress import Progress, fingerprint, record_result
from checker.run.batch import Task, score_all
from checker.run.report import _Style, cap

if TYPE_CHECKING:
    from checker.run.warm import WarmLauncher

BAR_WIDTH = 30
STATUS_COLOUR = {"pass": "32", "fail": "31", "error": "31", "timeout": "33", "missing": "33"}
MARK = {"pass": "✓", "fail": "✗", "error": "✗", "timeout": "⧗", "not_started": "·", "missing": "?"}


@dataclass
class Row:
    kata: Kata
    status: str
    score: int
    max_score: int
    hints_used: int
    hints_total: int | None
    cached: bool
    last_run: str
    message: str = ""

    def to_json(self) -> dict:
        return {"kata": self.kata.number, "slug": self.kata.slug, "title": self.kata.title, "status": self.status,
                "score": self.score, "max_score": self.max_score, "hints_used": self.hints_used,
                "hints_total": self.hints_total, "cached": self.cached, "last_run": self.last_run,
                "message": self.message}


def _hints_total(kata: Kata) -> int | None:
    try:
        return len(load_hints(kata))
    except HintError:
        return None


def collect(*, jobs: int | None = None, seed: int, profile: str | None, fresh: bool = False,
            launcher: "WarmLauncher | None" = None) -> list[Row]:
    """Score every kata in the manifest (reusing unchanged results unless `fresh`) and record the new runs."""
    katas = list(load_katas())
    progress = Progress.load()
    rows: dict[int, Row] = {}
    tasks, prints = [], {}
    for kata in katas:
        remember_pristine(kata)
        rec = progress.peek(kata)
        used = progress.hints_used(kata)
        stub = kata.stub_path
        if stub.is_file():
            prints[kata.slug] = fingerprint(kata, stub, seed, profile)
            if not fresh and rec.get("fingerprint") == prints[kata.slug] and isinstance(rec.get("score"), int):
                rows[kata.number] = Row(kata, str(rec.get("status")), rec["score"], int(rec.get("max_score") or 0),
                                        used, _hints_total(kata), True, str(rec.get("last_run", "")))
                continue
        tasks.append(Task(kata, stub if stub.is_file() else None))
    results = score_all(tasks, jobs=jobs, seed=seed, profile=profile, launcher=launcher)
    progress = Progress.load()  # re-read: a hint may have been taken while the katas ran
    for task, result in zip(tasks, results):
        kata = task.kata
        if result.status != "missing":
            record_result(kata, result, prints[kata.slug], profile, progress)
        message = result.message if result.status in ("error", "timeout", "missing") else ""
        message = message.replace(str(kata.stub_path.resolve()), display_path(kata.stub_path))
        rows[kata.number] = Row(kata, result.status, result.score, result.max_score, progress.hints_used(kata),
                                _hints_total(kata), False, progress.peek(kata).get("last_run", ""), message)
    progress.save()
    return [rows[k.number] for k in katas]


def bar(fraction: float, width: int = BAR_WIDTH) -> str:
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * filled + "░" * (width - filled)


def render(rows: list[Row], *, colour: bool, elapsed: float) -> str:
    style = _Style(colour)
    by_number = {r.kata.number: r for r in rows}
    width = max([len(r.kata.title) for r in rows] + [4])
    width = min(width, 56)
    out = [style("fx-katas progress", "1"), "",
           f"  {'#':>2}  {'kata':<{width}}  {'status':<13} {'score':>7}  hints"]
    for r in rows:
        title = r.kata.title if len(r.kata.title) <= width else r.kata.title[: width - 1] + "…"
        status = f"{MARK.get(r.status, ' ')} {r.status.replace('_', ' ')}"
        status = style(f"{status:<13}", STATUS_COLOUR.get(r.status, "2"))
        hints = f"{r.hints_used} of {r.hints_total}" if r.hints_total else (str(r.hints_used) if r.hints_used else "-")
        out.append(f"  {r.kata.number:>2}  {title:<{width}}  {status} {f'{r.score}/{r.max_score}':>7}  {hints}")
        if r.message:
            first = cap(r.message, lines=1, chars=200).splitlines()[0]
            out.append(style(f"      {first}", "2"))
        waiting = [n for n in r.kata.builds_on if by_number.get(n) is not None and by_number[n].status != "pass"]
        if r.status != "pass" and waiting:
            out.append(style(f"      builds on your kata{'s' * (len(waiting) > 1)} "
                             f"{', '.join(map(str, waiting))}: finish {'them' if len(waiting) > 1 else 'it'} first", "2"))
    score, top = sum(r.score for r in rows), sum(r.max_score for r in rows)
    passed = sum(r.status == "pass" for r in rows)
    fraction = score / top if top else 0.0
    out += ["", f"  {style(bar(fraction), '32')} {fraction:4.0%}   {score}/{top} points · "
                f"{passed} of {len(rows)} katas pass"]
    todo = next((r for r in rows if r.status != "pass"), None)
    if todo is None:
        out.append("Every kata passes. Well done.")
    elif todo.status == "missing":
        out.append(f"Next: kata {todo.kata.number} — its file {display_path(todo.kata.stub_path)} is missing; "
                   f"`make reset N={todo.kata.number}` puts the stub back.")
    else:
        out.append(f"Next: kata {todo.kata.number} ({todo.kata.title}) — `make kata N={todo.kata.number}`.")
    reused = sum(r.cached for r in rows)
    note = f"{reused} unchanged kata{'s' if reused != 1 else ''} reused from the last run; --fresh re-runs all. " if reused else ""
    out.append(style(f"({note}{elapsed:.1f} s)", "2"))
    return "\n".join(out)


def default_jobs() -> int:
    return os.cpu_count() or 1


def timed_collect(**kwargs) -> tuple[list[Row], float]:
    started = time.monotonic()
    rows = collect(**kwargs)
    return rows, time.monotonic() - started
