"""The learner's run as it happens, on a terminal: each failing check the moment it fails, and one progress line.

`run_kata(..., on_event=LiveReport(...))` hands this every event of the checks processes as it arrives (from
their reader threads). A failure is printed at once, message and all, so a wrong attempt sees its first failing
check while the others still run; passing checks only move the progress line ("12/27 checks · 1 failing ·
running: weights_are_uploaded_once, 3 s"). When the run ends, `close()` clears that line and the usual report
(checker/run/report.py) follows, grouped by stage, without repeating the messages shown here (`shown`).

Which checks run first is `first_checks`: those that failed on the learner's last full run, then the others by
how many known mistakes each catches per second of its time on the reference (the kata's mutation report), so
that a wrong attempt meets the check likeliest to catch it early. The report lists checks in kata order whatever
the order they ran in.
"""
from __future__ import annotations

import threading
import time
from typing import TextIO

from checker.core.manifest import Kata
from checker.run.report import FAILED, _Style, check_block
from checker.run.runner import CheckResult

REFRESH_SECONDS = 0.5


class LiveReport:
    """Callable with one event dict at a time; thread-safe. Writes only to `stream`, which must be a terminal
    (the progress line is redrawn in place with a carriage return)."""

    def __init__(self, kata: Kata, stream: TextIO, *, colour: bool, columns: int | None, verbose: bool = False):
        self.kata = kata
        self.stream = stream
        self.style = _Style(colour)
        self.columns = columns or 80
        self.verbose = verbose
        self.planned: dict[str, tuple[str, str, int]] = {}  # id -> (stage, name, weight)
        self.done = 0
        self.failing = 0
        self.running: dict[str, float] = {}  # id -> time.monotonic() when it started
        self.shown: set[str] = set()
        self._shown_errors: dict[str, CheckResult] = {}
        self._lock = threading.Lock()
        self._progress_drawn = False
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True, name="fx-katas-progress")
        self._ticker.start()

    def __call__(self, event: dict) -> None:
        kind = event.get("event")
        with self._lock:
            if kind == "plan":
                self.planned = {sid: (stage, name, weight) for sid, stage, name, weight in event.get("checks", [])}
            elif kind == "start":
                self.running[str(event.get("id"))] = time.monotonic()
            elif kind == "result":
                self._finished(event)
            else:
                return
            self._draw_progress()

    def _finished(self, event: dict) -> None:
        check_id = str(event.get("id"))
        self.running.pop(check_id, None)
        self.done += 1
        status = str(event.get("status", ""))
        if status not in FAILED or check_id not in self.planned:
            return
        self.failing += 1
        stage, name, weight = self.planned[check_id]
        check = CheckResult(check_id, stage, name, status, weight, message=str(event.get("message", "")))
        lines = check_block(check, self.style, shown_errors=self._shown_errors, verbose=self.verbose,
                            columns=self.columns)
        self._clear_progress()
        if not self.shown:
            self.stream.write(self.style(f"Kata {self.kata.number}: failing as they finish (the full report "
                                         f"follows when every check has run)", "1") + "\n")
        self.stream.write("\n".join(lines) + "\n")
        self.shown.add(check_id)

    def _progress_text(self) -> str:
        total = len(self.planned) or "?"
        parts = [f"{self.done}/{total} checks"]
        if self.failing:
            parts.append(f"{self.failing} failing")
        if self.running:
            check_id, since = min(self.running.items(), key=lambda item: item[1])
            name = self.planned.get(check_id, ("", check_id, 0))[1]
            parts.append(f"running: {name}, {time.monotonic() - since:.0f} s")
        text = "  " + " · ".join(parts)
        width = self.columns - 1
        return text if len(text) <= width else text[:width - 1] + "…"

    def _draw_progress(self) -> None:
        self.stream.write("\r\033[K" + self.style(self._progress_text(), "2"))
        self.stream.flush()
        self._progress_drawn = True

    def _clear_progress(self) -> None:
        if self._progress_drawn:
            self.stream.write("\r\033[K")
            self._progress_drawn = False

    def _tick(self) -> None:
        """Redraw the progress line now and then, so the running check's seconds move while it runs."""
        while not self._stop.wait(REFRESH_SECONDS):
            with self._lock:
                if self.planned:
                    self._draw_progress()

    def close(self) -> None:
        """Stop redrawing and clear the progress line; a blank line separates what was shown from the report."""
        self._stop.set()
        self._ticker.join(timeout=2)
        with self._lock:
            self._clear_progress()
            if self.shown:
                self.stream.write("\n")
            self.stream.flush()


def first_checks(kata: Kata, last_failing: list[str]) -> tuple[str, ...]:
    """The order checks run in for an interactive run: `last_failing` (the learner's last full run) first, then
    every check the mutation report knows, the most known mistakes caught per second first. Checks it does not
    know keep their kata order after those (the checks process runs unnamed checks last)."""
    from checker.core.mutation_report import load_report

    try:
        report = load_report(kata)
    except (OSError, ValueError, KeyError, TypeError):  # a damaged report orders nothing; the verdict is the same
        report = None
    ranked: list[str] = []
    if report is not None:
        catches = {check: float(stats.get("kills", 0)) for check, stats in report.checks.items()}
        for mutant in report.hand_mutants:
            for check in mutant.failing:
                catches[check] = catches.get(check, 0.0) + 1
        seconds = {check: float(stats.get("seconds", 0.0)) for check, stats in report.checks.items()}
        ranked = sorted(catches, key=lambda c: (-catches[c] / max(seconds.get(c, 0.0), 0.05), c))
    return tuple(dict.fromkeys([*last_failing, *ranked]))
