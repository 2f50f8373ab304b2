"""Score many (kata, attempt file) pairs in parallel: what `checker all` and `checker grade` share.

Each attempt runs in its own child process (checker/run/runner.py) under its time limit; at most `jobs` at once.
Shortcuts keep batches fast without changing a verdict: a missing file is `missing`, and a file identical to
the pristine stub is `not_started` (the self-tests guarantee every pristine stub scores exactly that); both
take the kata's checks and points from `checker.trusted.check_list`, which imports only the hidden checks. A crash
of the checker itself on one attempt becomes that attempt's `error`, never the batch's end.
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from checker.core.manifest import REPO_ROOT, Kata
from checker.core.processes import child_env
from checker.core.stubs import BackupError, pristine_stub
from checker.kit import DEFAULT_SEED
from checker.run.runner import CheckResult, KataResult, installed_torch_version, run_kata, run_many
from checker.trusted.check_list import MARKER

if TYPE_CHECKING:
    from checker.attempt.sandbox import Sandbox
    from checker.run.warm import WarmLauncher

PROBE_TIME_LIMIT = 180.0


@dataclass(frozen=True)
class Task:
    kata: Kata
    attempt: Path | None  # None: the learner has no file for this kata
    label: str = ""       # who the attempt belongs to (grade), for progress lines
    time_limit: float | None = None  # this attempt's, instead of the batch's (an autograder's per-kata limit)
    sandbox: "Sandbox | None" = None  # where the attempt's worker runs (checker grade; checker/attempt/sandbox.py)


def probe_plans(katas: list[Kata]) -> dict[str, list | str]:
    """slug -> [(id, stage, name, weight), ...] of each kata's checks, or a message saying why it is unknown."""
    if not katas:
        return {}
    paths = [str(k.checks_path) for k in katas]
    try:
        proc = subprocess.run([sys.executable, "-m", "checker.trusted.check_list", *paths], capture_output=True,
                              text=True, cwd=REPO_ROOT, env=child_env(), stdin=subprocess.DEVNULL,
                              timeout=PROBE_TIME_LIMIT)
        line = next((l for l in reversed(proc.stdout.splitlines()) if l.startswith(MARKER)), None)
        found = json.loads(line[len(MARKER):]) if line else {}
        problem = "" if line else (proc.stderr.strip().splitlines() or ["no output"])[-1]
    except subprocess.TimeoutExpired:
        found, problem = {}, f"loading the checks took over {PROBE_TIME_LIMIT:g} s"
    return {k.slug: found.get(str(k.checks_path), f"could not load the kata's checks: {problem}") for k in katas}


def placeholder_result(kata: Kata, attempt: Path | None, status: str, plan: list | str, message: str,
                       seed: int = DEFAULT_SEED) -> KataResult:
    """A result for an attempt that was not run (missing file, untouched stub) or whose run broke the checker."""
    torch_version = installed_torch_version() or "not installed"
    check_status = {"not_started": "not_implemented"}.get(status, "not_run")
    checks = [CheckResult(sid, stage, name, check_status, weight) for sid, stage, name, weight in plan] \
        if isinstance(plan, list) else []
    if isinstance(plan, str):
        message = f"{message} (maximum score unknown: {plan})"
    return KataResult(kata.number, kata.title, status, 0, sum(c.weight for c in checks), checks,
                      str(attempt) if attempt else "", torch_version, 0.0, message=message, seed=seed)


def _normalised(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n")


class _PristineCache:
    def __init__(self) -> None:
        self._seen: dict[str, bytes | None] = {}

    def same(self, kata: Kata, attempt: Path) -> bool:
        if kata.slug not in self._seen:
            try:
                self._seen[kata.slug] = _normalised(pristine_stub(kata)[0])
            except (BackupError, OSError):
                self._seen[kata.slug] = None
        pristine = self._seen[kata.slug]
        try:
            return pristine is not None and _normalised(attempt.read_bytes()) == pristine
        except OSError:
            return False


def score_all(
    tasks: list[Task],
    *,
    jobs: int | None = None,
    seed: int = DEFAULT_SEED,
    profile: str | None = None,
    time_limit: float | None = None,
    on_done: Callable[[Task, KataResult], None] | None = None,
    hidden_root: Path | None = None,
    launcher: "WarmLauncher | None" = None,
) -> list[KataResult]:
    """One KataResult per task, in the order given. `launcher`: a warm server forks the checks processes
    (checker/run/warm.py); the results are the same without."""
    pristine = _PristineCache()
    results: list[KataResult | None] = [None] * len(tasks)
    waiting: dict[int, tuple[str, str]] = {}  # index -> (status, message), filled in once plans are known
    runs: list[int] = []
    for i, task in enumerate(tasks):
        if task.attempt is None or not task.attempt.is_file():
            waiting[i] = ("missing", f"no file {task.attempt}" if task.attempt else "no file for this kata")
        elif pristine.same(task.kata, task.attempt):
            waiting[i] = ("not_started", "identical to the pristine stub: nothing implemented yet")
        else:
            runs.append(i)

    def run(i: int) -> Callable[[], KataResult]:
        task = tasks[i]
        return lambda: run_kata(task.kata, task.attempt, seed=seed, profile=profile, time_limit=task.time_limit or time_limit,
                                hidden_root=hidden_root, launcher=launcher, sandbox=task.sandbox)

    need_plans = sorted({tasks[i].kata for i in waiting}, key=lambda k: k.number)
    jobs_list: list[Callable] = [run(i) for i in runs] + ([lambda: probe_plans(need_plans)] if need_plans else [])
    plans: dict[str, list | str] = {}
    failed: dict[int, BaseException] = {}
    for index, value in run_many(jobs_list, jobs):
        if index == len(runs):
            plans = value if isinstance(value, dict) else {k.slug: f"{value}" for k in need_plans}
            continue
        i = runs[index]
        if isinstance(value, BaseException):
            failed[i] = value
            continue
        results[i] = value
        if on_done:
            on_done(tasks[i], value)
    if failed:
        extra = sorted({tasks[i].kata for i in failed} - set(need_plans), key=lambda k: k.number)
        plans.update(probe_plans(extra))
        for i, exc in failed.items():
            waiting[i] = ("error", f"the checker itself failed on this attempt: {type(exc).__name__}: {exc}")
    for i, (status, message) in sorted(waiting.items()):
        task = tasks[i]
        results[i] = placeholder_result(task.kata, task.attempt, status, plans.get(task.kata.slug, "not loaded"),
                                        message, seed)
        if on_done:
            on_done(task, results[i])
    return [r for r in results if r is not None]
