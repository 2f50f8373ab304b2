"""`python -m checker diff N` (`make diff N=k`): an attempt next to the reference, for mentors and finishers.

Prints a unified diff of the source (colour only on a terminal), then what each produces for the kata's
sample model, side by side: the kata's `sample_graphs` hook (see checker/kit/samples.py) runs in a child process
under a time limit, because it calls the attempt's code.
"""
from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import tempfile
import textwrap
from itertools import zip_longest
from pathlib import Path
from typing import TYPE_CHECKING

from checker.core.manifest import Kata, display_path
from checker.core.processes import child_env
from checker.run.report import _Style
from checker.run.runner import _EventReader, _describe_exit, _kill_group, _parse_events, start_child

if TYPE_CHECKING:
    from checker.run.warm import WarmLauncher

SAMPLE_FILE = Path("hidden") / "sample.py"
DEFAULT_SAMPLE_TIME_LIMIT = 60.0


def source_diff(attempt: Path, reference: Path, *, colour: bool) -> str:
    mine = attempt.read_text(encoding="utf-8", errors="replace")
    theirs = reference.read_text(encoding="utf-8", errors="replace")
    return text_diff(mine, theirs, f"{display_path(attempt)} (your attempt)", f"{display_path(reference)} (reference)",
                     colour=colour, same="Your attempt and the reference are the same file, line for line.")


def text_diff(old: str, new: str, old_label: str, new_label: str, *, colour: bool, same: str) -> str:
    """A unified diff of two texts (`same` when they do not differ), coloured like `git diff` when asked."""
    style = _Style(colour)
    lines = list(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                      old_label, new_label))
    if not lines:
        return same
    out = []
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith(("---", "+++")):
            out.append(style(line, "1"))
        elif line.startswith("@@"):
            out.append(style(line, "36"))
        elif line.startswith("-"):
            out.append(style(line, "31"))
        elif line.startswith("+"):
            out.append(style(line, "32"))
        else:
            out.append(line)
    return "\n".join(out)


def run_sample(kata: Kata, attempt: Path, time_limit: float | None = None, *,
               launcher: "WarmLauncher | None" = None) -> tuple[str, str] | str:
    """(attempt column, reference column) from the kata's hook, or a one-line reason there are none. With a
    `launcher`, a warm server forks the sample process (checker/run/warm.py); else, or if it cannot, it starts cold."""
    found = _sample_child(kata, attempt, time_limit, [], launcher)
    if isinstance(found, str):
        return found
    return str(found.get("attempt", "")), str(found.get("reference", ""))


def run_pictures(kata: Kata, attempt: Path, time_limit: float | None = None, *, capture: str | None = None,
                 model: str | None = None, launcher: "WarmLauncher | None" = None) -> list | str:
    """The kata's graph pictures (checker.kit.pictures Panels) for `attempt` and the reference, or why there are none
    (`launcher` as for run_sample)."""
    from checker.kit.pictures import panels_from_data

    extra = ["--pictures"] + (["--capture", capture] if capture else []) + (["--model", model] if model else [])
    found = _sample_child(kata, attempt, time_limit, extra, launcher)
    if isinstance(found, str):
        return found
    if "error" in found:
        return str(found["error"])
    return panels_from_data(found["panels"])


def _sample_child(kata: Kata, attempt: Path, time_limit: float | None, extra: list[str],
                  launcher: "WarmLauncher | None" = None) -> dict | str:
    """Run the kata's sample hook in a child process under a time limit: its event, or a one-line reason."""
    hooks = [kata.folder / SAMPLE_FILE, kata.checks_path]
    if not any(h.is_file() for h in hooks):
        return f"kata {kata.number} has no sample model to show"
    limit = time_limit or min(kata.time_limit, DEFAULT_SAMPLE_TIME_LIMIT)
    with tempfile.TemporaryDirectory(prefix="fx-katas-diff-") as tmp:
        output_path = Path(tmp) / "output.txt"
        read_fd, write_fd = os.pipe()
        argv = ["--attempt", str(attempt.resolve()), "--reference", str(kata.solution_path),
                "--module-name", Path(kata.module).stem, *extra]
        for hook in hooks:
            argv += ["--hook", str(hook)]
        with open(output_path, "wb") as output:
            try:
                proc = start_child("sample", argv, child_env(), Path(tmp), output, write_fd, launcher)
            finally:
                os.close(write_fd)
            reader = _EventReader(read_fd)
            reader.start()
            timed_out = False
            try:
                proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                _kill_group(proc)
        reader.join(timeout=5)
        events = _parse_events(reader.lines)
        output_text = output_path.read_text(encoding="utf-8", errors="replace").strip()
    for event in events:
        if event.get("event") == "none":
            return f"kata {kata.number} has no sample model to show"
        if event.get("event") in ("sample", "pictures"):
            return event
    if timed_out:
        return f"the sample did not finish within {limit:g} s (a loop that never ends in your code?)"
    if proc.returncode and proc.returncode < 0:
        return f"the sample could not be drawn: {_describe_exit(proc.returncode)}"
    lines = output_text.splitlines() or ["no output"]
    frames = [line.strip() for line in lines if line.strip().startswith('File "')]
    where = f" ({frames[-1]})" if frames else ""  # the innermost frame of the traceback: where to look
    return f"the sample could not be drawn (exit code {proc.returncode}): {lines[-1]}{where}"


def _wrap(text: str, width: int) -> list[str]:
    indent = " " * (len(text) - len(text.lstrip()) + 4)
    return textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False) or [""]


def side_by_side(left: str, right: str, *, width: int, colour: bool,
                 titles: tuple[str, str] = ("your attempt", "reference")) -> str:
    """Two texts in columns, aligned like `diff -y`: '|' changed line, '<' only left, '>' only right."""
    style = _Style(colour)
    a, b = left.splitlines(), right.splitlines()
    if a == b:
        return "\n".join([style(f"{titles[0]} and {titles[1]} give the same:", "1"), *a])
    if width < 70:
        return "\n".join([style(f"{titles[0]}:", "1"), *a, "", style(f"{titles[1]}:", "1"), *b])
    col = (width - 3) // 2
    rows: list[tuple[str, str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            rows += [(x, " ", y) for x, y in zip(a[i1:i2], b[j1:j2])]
        else:
            for x, y in zip_longest(a[i1:i2], b[j1:j2]):
                mark = "|" if x is not None and y is not None else ("<" if y is None else ">")
                rows.append((x or "", mark, y or ""))
    out = [style(f"{titles[0]:<{col}}   {titles[1]}", "1")]
    for x, mark, y in rows:
        xs, ys = _wrap(x, col), _wrap(y, col)
        for n, (xl, yl) in enumerate(zip_longest(xs, ys, fillvalue="")):
            m = mark if n == 0 else " "
            line = f"{xl:<{col}} {m} {yl}".rstrip()
            out.append(style(line, "33") if mark != " " else line)
    return "\n".join(out)


def terminal_width() -> int:
    return shutil.get_terminal_size((140, 24)).columns
