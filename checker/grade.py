"""`python -m checker grade DIR`: score many learners' attempts in parallel, for mentors and autograders.

DIR holds one folder per learner, each laid out like `katas/` (DIR/alice/01_dialects/dialects.py); a learner
folder may also be a whole checkout (DIR/alice/katas/01_dialects/...) or hold the module files flat
(DIR/alice/dialects.py) when module names are unique. When DIR itself is laid out like that, it is one learner
(a Gradescope submission folder). Every attempt runs in its own child process under a time limit: a crash or
a hang is that attempt's result and the batch goes on.

Writes to OUT (default: DIR's sibling `<DIR>-grades/`):
  gradebook.csv                  learner, one score column per kata, total, max_total, one status column per kata
  <learner>.json                 every kata's result with every check (schema_version 1)
  results.json (--gradescope)    Gradescope's format; one per learner in gradescope/<learner>/ when grading many
  reviews/<learner>.md           for a mentor: each kata's status, hints used, time to pass and the learner's
                                 source diffed against the reference (the gradebook's `review` column links it)

Hints used and time to pass come from the learner's `.kata-progress.json` when the folder holds one.
"""
from __future__ import annotations

import contextlib
import csv
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from checker import RESULTS_SCHEMA_VERSION
from checker.batch import Task, score_all
from checker.manifest import Kata
from checker.runner import KataResult
from checker.warm import PrivateServer

WARM_FROM_RUNS = 4  # attempts to run before grading starts a warm server of its own

PASSED = "passed"
FAILED = "failed"


class GradeError(Exception):
    """Bad input to `grade` (one line, exit 2)."""


@dataclass(frozen=True)
class Learner:
    name: str
    folder: Path


def _holds_katas(folder: Path, katas: list[Kata]) -> bool:
    """Is `folder` one learner's work (kata folders, a checkout, or the module files themselves)?"""
    return any((folder / k.slug).is_dir() or (folder / "katas" / k.slug).is_dir() or (folder / k.module).is_file()
               for k in katas)


def find_learners(root: Path, katas: list[Kata], out: Path) -> tuple[list[Learner], bool]:
    """The learners under `root`, and whether `root` is itself a single learner's folder."""
    if not root.is_dir():
        raise GradeError(f"{root}: no such directory")
    if _holds_katas(root, katas):
        return [Learner(root.resolve().name, root)], True
    out = out.resolve()
    folders = [p for p in sorted(root.iterdir()) if p.is_dir() and not p.name.startswith((".", "__"))
               and p.resolve() != out]
    if not folders:
        raise GradeError(f"{root}: no learner folders in it (expected {root}/<learner>/<kata folder>/<module>.py)")
    return [Learner(p.name, p) for p in folders], False


def attempt_path(learner: Learner, kata: Kata, flat_ok: bool) -> Path:
    """Where the learner's file for `kata` is; the usual place when there is none (it is then `missing`)."""
    candidates = [learner.folder / kata.slug / kata.module, learner.folder / "katas" / kata.slug / kata.module]
    if flat_ok:
        candidates.append(learner.folder / kata.module)
    return next((c for c in candidates if c.is_file()), candidates[0])


def _kata_max(results: dict[tuple[str, str], KataResult], katas: list[Kata]) -> dict[str, int]:
    """Each kata's maximum score: the largest any result saw (an attempt that crashed early may report less)."""
    return {k.slug: max((r.max_score for (_, slug), r in results.items() if slug == k.slug), default=0) for k in katas}


def learner_progress(learner: Learner) -> dict:
    """The learner's `.kata-progress.json` (hints taken, first run, when it passed), if their folder holds one."""
    for candidate in (learner.folder / ".kata-progress.json", learner.folder.parent / ".kata-progress.json"):
        try:
            data = json.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("katas"), dict):
            return data["katas"]
    return {}


def kata_facts(progress: dict, kata: Kata) -> dict:
    """Hints used and time from first run to pass for one kata, as strings ("" when unknown)."""
    from datetime import datetime

    record = progress.get(kata.slug, {}) if isinstance(progress.get(kata.slug), dict) else {}
    hints = record.get("hints_used")
    took = ""
    try:
        seconds = (datetime.fromisoformat(record["passed_at"]) - datetime.fromisoformat(record["first_run"])).total_seconds()
        took = f"{int(seconds // 3600)}h {int(seconds % 3600 // 60):02d}m" if seconds >= 3600 else f"{int(seconds // 60)}m"
    except (KeyError, TypeError, ValueError):
        pass
    return {"hints": str(hints) if isinstance(hints, int) else "", "time_to_pass": took}


def write_review(learner: Learner, katas: list[Kata], results: dict, maxima: dict[str, int], progress: dict,
                 folder: Path) -> Path:
    """reviews/<learner>.md: per kata, the verdict, hints, time to pass, and the learner's source against the
    reference (what `make diff` shows, without colour), for a mentor reading one learner's work."""
    from checker.diffing import source_diff

    lines = [f"# {learner.name}", ""]
    for kata in katas:
        result = results[(learner.name, kata.slug)]
        facts = kata_facts(progress, kata)
        lines += [f"## Kata {kata.number} · {kata.title}", "",
                  f"{result.status.replace('_', ' ')}, {result.score}/{maxima[kata.slug]}"
                  + (f"; hints used: {facts['hints']}" if facts["hints"] else "")
                  + (f"; time to pass: {facts['time_to_pass']}" if facts["time_to_pass"] else ""), ""]
        failing = [c for c in result.checks if c.status not in ("pass", "not_run", "not_implemented")]
        lines += [f"- {c.name}: {c.message.strip().splitlines()[0] if c.message.strip() else c.status}" for c in failing[:8]]
        attempt = Path(result.attempt) if result.attempt else None
        if attempt is not None and attempt.is_file():
            lines += ["", "```diff", source_diff(attempt, kata.solution_path, colour=False), "```", ""]
        else:
            lines += ["", "(no file handed in)", ""]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{learner.name}.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def gradescope_json(results: list[KataResult], katas: list[Kata], maxima: dict[str, int],
                    facts: list[dict] | None = None) -> dict:
    """Gradescope's results.json: one test per check that ran, one per kata for katas that did not run."""
    tests = []
    for kata, result in zip(katas, results):
        ran = [c for c in result.checks if c.status not in ("not_run", "not_implemented")]
        if ran:
            for check in result.checks:
                passed = check.status == "pass"
                if check.status == "not_run":
                    output = f"not run: the checks stopped early ({result.status}; see the summary above)"
                else:
                    output = check.message or ("" if passed else check.status.replace("_", " "))
                tests.append({"name": f"Kata {kata.number} · {check.stage} · {check.name}",
                              "score": check.weight if passed else 0, "max_score": check.weight,
                              "output": output, "status": PASSED if passed else FAILED})
        else:
            words = {"missing": "no file submitted", "not_started": "nothing implemented yet"}
            output = words.get(result.status, result.status)
            if result.message and result.status not in words:
                output += f": {result.message}"
            tests.append({"name": f"Kata {kata.number} · {kata.title}", "score": 0,
                          "max_score": maxima[kata.slug], "output": output, "status": FAILED})
    score = sum(r.score for r in results)
    lines = []
    for k, r, fact in zip(katas, results, facts or [{}] * len(katas)):
        known = [f"hints used: {fact['hints']}"] if fact.get("hints") else []
        known += [f"time to pass: {fact['time_to_pass']}"] if fact.get("time_to_pass") else []
        extra = f" ({'; '.join(known)})" if known else ""
        lines.append(f"Kata {k.number} ({k.title}): {r.status.replace('_', ' ')}, {r.score}/{maxima[k.slug]}{extra}")
        if r.message and r.status in ("error", "timeout"):
            lines.append("  " + r.message.strip().splitlines()[0])
    return {"score": score, "output": "\n".join(lines), "tests": tests}  # the maximum: the tests' max_score summed


def learner_json(learner: Learner, results: list[KataResult], katas: list[Kata], maxima: dict[str, int]) -> dict:
    entries = []
    for kata, result in zip(katas, results):
        data = result.to_json()
        data["slug"] = kata.slug
        data["max_score"] = max(result.max_score, maxima[kata.slug])
        entries.append(data)
    return {"schema_version": RESULTS_SCHEMA_VERSION, "learner": learner.name,
            "score": sum(r.score for r in results), "max_score": sum(maxima[k.slug] for k in katas), "katas": entries}


def _progress_line(task: Task, result: KataResult) -> None:
    took = f"{result.duration_s:5.1f} s" if result.duration_s else "      "
    print(f"  {task.label:<20} {task.kata.slug:<24} {result.status:<12} {result.score:>4}/{result.max_score:<4} {took}",
          file=sys.stderr, flush=True)


def working_copy(learner: Learner, into: Path, flat_ok: dict[str, bool]) -> Path:
    """Copy the learner's kata files (every `.py` beside each kata's module, for every kata of the manifest:
    kata 5 loads the learner's own katas 3 and 4) into `into/<slug>/`, and return `into`.

    Each learner is graded from such a copy, made before any attempt runs: an attempt that writes to its own
    or another learner's folder changes nobody's result but, at most, its own."""
    import shutil

    from checker.manifest import load_katas

    for kata in load_katas():
        source = attempt_path(learner, kata, flat_ok.get(kata.slug, False))
        if not source.is_file():
            continue
        target = into / kata.slug
        target.mkdir(parents=True, exist_ok=True)
        beside = [source] if source.parent == learner.folder else sorted(source.parent.glob("*.py"))
        for path in beside:
            if path.is_file():
                shutil.copy2(path, target / (kata.module if path == source else path.name))
    return into


def grade(root: Path, katas: list[Kata], *, out: Path | None = None, gradescope: bool = False,
          jobs: int | None = None, time_limit: float | None = None, seed: int, profile: str | None,
          quiet: bool = False, time_limits: dict[int, float] | None = None, single: bool | None = None) -> str:
    """Grade every learner under `root`; writes the files and returns the summary to print.

    Before any attempt runs, every learner's files are copied into a private working copy and the hidden
    checks and references into a snapshot: attempts run from the copies, checks load from the snapshot."""
    import tempfile

    from checker.manifest import load_katas
    from checker.runner import snapshot_hidden

    out = out or root.resolve().parent / f"{root.resolve().name}-grades"
    learners, found_single = find_learners(root, katas, out)
    single = found_single if single is None else single
    every_module = [k.module for k in load_katas()]
    flat_ok = {k.slug: every_module.count(k.module) == 1 for k in load_katas()}
    originals = {(lr.name, k.slug): attempt_path(lr, k, flat_ok[k.slug]) for lr in learners for k in katas}
    if not quiet:
        print(f"grading {len(learners)} learner{'s' * (len(learners) != 1)} × {len(katas)} "
              f"kata{'s' * (len(katas) != 1)}", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="fx-katas-grade-") as work:
        hidden = snapshot_hidden(Path(work) / "hidden")
        copies = {lr.name: working_copy(lr, Path(work) / "learners" / f"{i:04d}", flat_ok)
                  for i, lr in enumerate(learners)}
        tasks = [Task(k, copies[lr.name] / k.slug / k.module if originals[(lr.name, k.slug)].is_file()
                      else originals[(lr.name, k.slug)], lr.name, (time_limits or {}).get(k.number))
                 for lr in learners for k in katas]
        # A warm server only this process can reach, started before any attempt runs (checker/warm.py). Its
        # warm-up costs about one cold start, so it pays off from a handful of attempts on.
        runs = sum(1 for task in tasks if task.attempt is not None and task.attempt.is_file())
        with PrivateServer() if runs >= WARM_FROM_RUNS else contextlib.nullcontext(PrivateServer()) as server:
            scored = score_all(tasks, jobs=jobs, seed=seed, profile=profile, time_limit=time_limit,
                               on_done=None if quiet else _progress_line, hidden_root=hidden,
                               launcher=server.launcher())
    for task, result in zip(tasks, scored):  # report the learner's own path, not the working copy's
        result.attempt = str(originals[(task.label, task.kata.slug)])
    results = {(t.label, t.kata.slug): r for t, r in zip(tasks, scored)}
    maxima = _kata_max(results, katas)
    out.mkdir(parents=True, exist_ok=True)
    top = sum(maxima[k.slug] for k in katas)
    progress = {lr.name: learner_progress(lr) for lr in learners}
    reviews = {lr.name: write_review(lr, katas, results, maxima, progress[lr.name], out / "reviews") for lr in learners}
    with open(out / "gradebook.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["learner", *(k.slug for k in katas), "total", "max_total", *(f"{k.slug} status" for k in katas),
                         *(f"{k.slug} hints" for k in katas), *(f"{k.slug} time to pass" for k in katas), "review"])
        for lr in learners:
            row = [results[(lr.name, k.slug)] for k in katas]
            facts = [kata_facts(progress[lr.name], k) for k in katas]
            writer.writerow([lr.name, *(r.score for r in row), sum(r.score for r in row), top, *(r.status for r in row),
                             *(f["hints"] for f in facts), *(f["time_to_pass"] for f in facts),
                             reviews[lr.name].relative_to(out).as_posix()])
    written = [out / "gradebook.csv"]
    for lr in learners:
        row = [results[(lr.name, k.slug)] for k in katas]
        path = out / f"{lr.name}.json"
        path.write_text(json.dumps(learner_json(lr, row, katas, maxima), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(path)
        if gradescope:
            target = out / "results.json" if single else out / "gradescope" / lr.name / "results.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            data = gradescope_json(row, katas, maxima, [kata_facts(progress[lr.name], k) for k in katas])
            target.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            written.append(target)
    return _summary(learners, katas, results, maxima, out, written)


def _summary(learners, katas, results, maxima, out: Path, written: list[Path]) -> str:
    cells = {(lr.name, k.slug): f"{results[(lr.name, k.slug)].score}/{maxima[k.slug]} "
                                f"{results[(lr.name, k.slug)].status.replace('_', ' ')}"
             for lr in learners for k in katas}
    width = {k.slug: max([len(f"kata {k.number}")] + [len(cells[(lr.name, k.slug)]) for lr in learners]) for k in katas}
    name_w = max([len(lr.name) for lr in learners] + [7])
    top = sum(maxima.values())
    lines = [f"{'learner':<{name_w}}  " + "  ".join(f"{'kata ' + str(k.number):<{width[k.slug]}}" for k in katas) + "  total"]
    for lr in learners:
        total = sum(results[(lr.name, k.slug)].score for k in katas)
        lines.append(f"{lr.name:<{name_w}}  " + "  ".join(f"{cells[(lr.name, k.slug)]:<{width[k.slug]}}" for k in katas)
                     + f"  {total}/{top}")
    extra = sum(1 for p in written if p.name == "results.json")
    lines += ["", f"wrote {out / 'gradebook.csv'}, {len(learners)} learner JSON file{'s' * (len(learners) != 1)}"
                  + (f" and {extra} Gradescope results.json" if extra else "") + f" in {out}"]
    return "\n".join(lines)
