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
  reviews/<learner>.md           for a mentor: each kata's status, hints used, time to pass, every failing
                                 check and the learner's source diffed against the pristine stub (and with
                                 --review-reference against the reference); the gradebook's `review` column
                                 links it

What a learner may see (results.json, <learner>.json) goes through learner_facing(): capped, and with no line
quoted from the checks or the references.

Hints used and time to pass come from the learner's `.kata-progress.json` when the folder holds one.
"""
from __future__ import annotations

import contextlib
import csv
import functools
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from checker import RESULTS_SCHEMA_VERSION
from checker.core.manifest import Kata
from checker.run.batch import Task, score_all
from checker.run.runner import KataResult
from checker.run.warm import PrivateServer

WARM_FROM_RUNS = 4  # attempts to run before grading starts a warm server of its own

CORRECTNESS_WORDS = ("guard", "safe", "numer", "equivalen", "correct")  # such checks lead a review's failing list
REVIEW_MAX_CHECKS = 40       # failing checks a review lists per kata before "... and N more"
REVIEW_MESSAGE_CHARS = 160   # of each failing check's first message line, in a review
OUTPUT_MAX_CHARS = 1000      # of each test's output in results.json (and each message of the learner's JSON)
WORKING_COPY_MARK = ".fx-katas-working-copy"  # katas/common/learner.py's: importing it would import torch
QUOTE_MIN_CHARS = 12         # a line this long (stripped) that a hidden file or a reference holds is not shown

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


def _flat_ok() -> dict[str, bool]:
    """slug -> may the learner's file for it sit flat in their folder (its module name is unique)?"""
    from checker.core.manifest import load_katas

    every_module = [k.module for k in load_katas()]
    return {k.slug: every_module.count(k.module) == 1 for k in load_katas()}


@functools.cache
def pristine_bytes(slug: str) -> bytes | None:
    """The kata's pristine stub as committed (checker.core.stubs.pristine_stub), never the working tree's file;
    None when there is none to be found."""
    from checker.core.manifest import load_katas
    from checker.core.stubs import BackupError, pristine_stub

    kata = next(k for k in load_katas() if k.slug == slug)
    try:
        return pristine_stub(kata)[0]
    except (BackupError, OSError):
        return None


@functools.cache
def kata_dependencies(slug: str) -> tuple[Kata, ...]:
    """The earlier katas whose learner files this kata's attempt loads (`your_kata("03_fusion_guard", ...)` in its
    committed stub): kata 5 loads katas 3 and 4."""
    from checker.core.manifest import load_katas

    katas = {k.slug: k for k in load_katas()}
    kata = katas[slug]
    source = pristine_bytes(slug)
    if source is None:
        try:
            source = kata.stub_path.read_bytes()
        except OSError:
            return ()
    found = re.findall(r"""your_kata\(\s*["']([^"']+)["']""", source.decode("utf-8", errors="replace"))
    return tuple(katas[s] for s in dict.fromkeys(found) if s in katas and s != slug)


def kata_sources(learner: Learner, kata: Kata, flat_ok: dict[str, bool] | None = None) -> list[str]:
    """Which file of each kata `kata` loads was used when grading it: "kata 3: your fusion.py", or "kata 3: not
    handed in, the pristine stub was used" (working_copy() puts it there)."""
    flat_ok = _flat_ok() if flat_ok is None else flat_ok
    if not attempt_path(learner, kata, flat_ok.get(kata.slug, False)).is_file():
        return []  # the kata itself was not handed in: it loaded nothing
    notes = []
    for used in kata_dependencies(kata.slug):
        if attempt_path(learner, used, flat_ok.get(used.slug, False)).is_file():
            notes.append(f"kata {used.number}: your {used.module}")
        elif pristine_bytes(used.slug) is not None:
            notes.append(f"kata {used.number}: not handed in, the pristine stub was used")
        else:
            notes.append(f"kata {used.number}: not handed in, and no pristine stub was found (kata {kata.number} "
                         f"could not load it)")
    return notes


def uses_columns(katas: list[Kata]) -> list[str]:
    """The gradebook's "<slug> uses" columns: one per graded kata that loads earlier katas (kata 5)."""
    return [f"{k.slug} uses" for k in katas if kata_dependencies(k.slug)]


def uses_cells(learner: Learner, katas: list[Kata], flat_ok: dict[str, bool]) -> list[str]:
    """Their cells: "kata 3: your fusion.py; kata 4: not handed in, the pristine stub was used"."""
    return ["; ".join(kata_sources(learner, k, flat_ok)) for k in katas if kata_dependencies(k.slug)]


def _is_correctness(check) -> bool:
    text = f"{check.id} {check.name} {check.stage}".lower()
    return any(word in text for word in CORRECTNESS_WORDS)


def failing_checks_lines(kata: Kata, result: KataResult, *, most: int = REVIEW_MAX_CHECKS) -> list[str]:
    """Every failing check of `result` (status fail, error or timeout), grouped by stage: first the stages'
    correctness and guard checks (a check whose id, name or stage holds one of CORRECTNESS_WORDS: guard, safe,
    numer, equivalen, correct), then the other failing checks, each group in the kata's stage order. Each
    check shows the first line of its message, at most REVIEW_MESSAGE_CHARS long. Past `most` checks the rest
    is counted ("... and N more"), never dropped silently."""
    failing = [c for c in result.checks if c.status not in ("pass", "not_run", "not_implemented")]
    if not failing:
        return []
    order = {stage: i for i, stage in enumerate(kata.stages)}
    failing.sort(key=lambda c: (not _is_correctness(c), order.get(c.stage, len(order)), c.stage))
    lines = [f"Failing checks ({len(failing)} of {len(result.checks)}; correctness and guard checks first):"]
    group = None
    for n, check in enumerate(failing):
        if n == most:
            lines.append(f"- ... and {len(failing) - most} more failing checks (the learner's JSON lists every one)")
            break
        heading = ("correctness and guards" if _is_correctness(check) else "other checks", check.stage)
        if heading != group:
            group = heading
            lines.append(f"- **{check.stage}**{' (correctness and guards)' if heading[0] != 'other checks' else ''}")
        first = check.message.strip().splitlines()[0] if check.message.strip() else check.status.replace("_", " ")
        if len(first) > REVIEW_MESSAGE_CHARS:
            first = first[:REVIEW_MESSAGE_CHARS - 1].rstrip() + "…"
        lines.append(f"  - {check.name} ({check.status}): {first}")
    not_run = sum(1 for c in result.checks if c.status == "not_run")
    if not_run:
        lines.append(f"- {not_run} more checks did not run (the checks stopped early: {result.status})")
    return lines


def write_review(learner: Learner, katas: list[Kata], results: dict, maxima: dict[str, int], progress: dict,
                 folder: Path, *, reference: bool = False) -> Path:
    """reviews/<learner>.md, for a mentor reading one learner's work: per kata, the verdict, hints, time to
    pass, which files of earlier katas it loaded (kata 5: katas 3 and 4), every failing check (see
    failing_checks_lines), and what the learner wrote: their file diffed against the pristine stub. With
    `reference` (`checker grade --review-reference`), also their file diffed against the reference (what
    `make diff` shows, without colour). No diff for a kata that is missing or not started."""
    from checker.learner.diffing import source_diff, text_diff

    flat_ok = _flat_ok()
    lines = [f"# {learner.name}", ""]
    for kata in katas:
        result = results[(learner.name, kata.slug)]
        facts = kata_facts(progress, kata)
        lines += [f"## Kata {kata.number} · {kata.title}", "",
                  f"{result.status.replace('_', ' ')}, {result.score}/{maxima[kata.slug]}"
                  + (f"; hints used: {facts['hints']}" if facts["hints"] else "")
                  + (f"; time to pass: {facts['time_to_pass']}" if facts["time_to_pass"] else ""), ""]
        sources = kata_sources(learner, kata, flat_ok)
        if sources and result.status != "missing":
            lines += ["Files of earlier katas it loaded: " + "; ".join(sources) + ".", ""]
        failing = failing_checks_lines(kata, result)
        if failing:
            lines += [*failing, ""]
        attempt = Path(result.attempt) if result.attempt else None
        if result.status == "missing" or attempt is None or not attempt.is_file():
            lines += ["(no file handed in)", ""]
            continue
        if result.status == "not_started":
            lines += ["(the pristine stub, unchanged: nothing to show)", ""]
            continue
        mine = attempt.read_text(encoding="utf-8", errors="replace")
        stub = pristine_bytes(kata.slug)
        if stub is None:
            lines += ["What they wrote: (the pristine stub could not be found, so there is no diff against it; "
                      "`--review-reference` diffs against the reference)", ""]
        else:
            lines += ["What they wrote (the pristine stub -> their file):", "", "```diff",
                      text_diff(stub.decode("utf-8", errors="replace"), mine, f"{kata.slug}/{kata.module} (stub)",
                                f"{kata.slug}/{kata.module} ({learner.name})", colour=False,
                                same="(identical to the pristine stub)"), "```", ""]
        if reference:
            lines += ["Against the reference (their file -> the reference):", "", "```diff",
                      source_diff(attempt, kata.solution_path, colour=False), "```", ""]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{learner.name}.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _quotable_lines(path: Path) -> set[str]:
    """The lines of a text file that a message could quote (stripped, at least QUOTE_MIN_CHARS long)."""
    try:
        data = path.read_bytes()
    except OSError:
        return set()
    if b"\0" in data[:4096]:
        return set()
    return {line.strip() for line in data.decode("utf-8", errors="replace").splitlines()
            if len(line.strip()) >= QUOTE_MIN_CHARS}


@functools.cache
def secret_lines(katas_dir: Path | None = None, solutions_dir: Path | None = None) -> frozenset[str]:
    """Every line of the references (solutions/) and of every katas/*/hidden/ folder that learners cannot read
    elsewhere: lines also in a lesson, a hint, a committed stub or katas/common are public and not counted."""
    from checker.core.manifest import KATAS_DIR, SOLUTIONS_DIR, load_katas

    katas_dir, solutions_dir = katas_dir or KATAS_DIR, solutions_dir or SOLUTIONS_DIR
    secret: set[str] = set()
    for path in [*solutions_dir.rglob("*"), *(p for hidden in katas_dir.glob("*/hidden") for p in hidden.rglob("*"))]:
        if path.is_file():
            secret |= _quotable_lines(path)
    public: set[str] = set()
    modules = {k.slug: k.module for k in load_katas()}
    for path in [*katas_dir.glob("*/*"), *(katas_dir / "common").rglob("*")]:
        if not path.is_file():
            continue
        if modules.get(path.parent.name) == path.name:  # the stub: as committed, never a mentor's solved one
            stub = pristine_bytes(path.parent.name)
            public |= {line.strip() for line in (stub or b"").decode("utf-8", errors="replace").splitlines()
                       if len(line.strip()) >= QUOTE_MIN_CHARS}
        else:
            public |= _quotable_lines(path)
    return frozenset(secret - public)


@functools.cache
def _secret_index(secret: frozenset[str]) -> dict[str, list[str]]:
    """Secret lines by their first QUOTE_MIN_CHARS characters, longest first."""
    index: dict[str, list[str]] = {}
    for line in sorted(secret, key=len, reverse=True):
        index.setdefault(line[:QUOTE_MIN_CHARS], []).append(line)
    return index


def _redact(line: str, secret: frozenset[str]) -> tuple[str, int]:
    """`line` with every secret line quoted inside it ("raised RuntimeError: <a line of checks.py>") replaced by
    "[hidden]", and how many were."""
    index = _secret_index(secret)
    out, found, i = [], 0, 0
    while i <= len(line) - QUOTE_MIN_CHARS:
        match = next((s for s in index.get(line[i:i + QUOTE_MIN_CHARS], ()) if line.startswith(s, i)), None)
        if match:
            out.append("[hidden]")
            found += 1
            i += len(match)
        else:
            out.append(line[i])
            i += 1
    return ("".join(out) + line[i:], found) if found else (line, 0)


_FRAME = re.compile(r'^(\s*)File "([^"]*)", line \d+')


def _learners_file(filename: str, modules: set[str]) -> bool:
    """Is a traceback frame's file one of the learner's own kata files (not a reference, a hidden file, or
    anything else)?"""
    parts = Path(filename).parts
    return bool(parts) and parts[-1] in modules and not {"solutions", "hidden", "site-packages"} & set(parts[:-1])


def learner_facing(text: str, *, limit: int | None = OUTPUT_MAX_CHARS, secret: frozenset[str] | None = None) -> str:
    """`text` as a learner may see it (results.json, the learner's JSON): no quoted line of the checks or the
    references, at most `limit` characters.

    - A traceback frame (`File "X", line N, in f`) of any file other than the learner's own kata files keeps its
      frame line, without the source lines under it.
    - Every line that is, stripped, a line of a reference or of a hidden folder (secret_lines) is dropped.
    Dropped lines are counted in a note. Past `limit` characters the text is cut, and the note says by how much."""
    from checker.core.manifest import load_katas

    secret = secret_lines() if secret is None else secret
    modules = {k.module for k in load_katas()}
    kept: list[str] = []
    hidden = 0
    frame_indent: int | None = None  # indent of a frame whose source lines are dropped
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        frame = _FRAME.match(line)
        if frame:
            kept.append(line)
            frame_indent = None if _learners_file(frame.group(2), modules) else len(frame.group(1))
            continue
        if frame_indent is not None and line.strip() and indent > frame_indent:
            hidden += 1 if line.strip().strip("^~ ") else 0
            continue
        frame_indent = None
        if line.strip() in secret:
            hidden += 1
            continue
        redacted, found = _redact(line, secret)
        hidden += found
        kept.append(redacted)
    if hidden:
        kept.append(f"[{hidden} line{'s' * (hidden != 1)} hidden: they quote the checks, the reference or code "
                    f"outside your file]")
    out = "\n".join(kept) if hidden else text
    if limit is not None and len(out) > limit:
        keep = limit - len(f"\n… (cut: {len(out)} more characters)")
        out = out[:keep].rstrip() + f"\n… (cut: {len(out) - keep} more characters)"
    return out


def gradescope_json(results: list[KataResult], katas: list[Kata], maxima: dict[str, int],
                    facts: list[dict] | None = None) -> dict:
    """Gradescope's results.json: one test per check that ran, one per kata for katas that did not run. Learners
    read it: every output goes through learner_facing (no quoted line of the checks or references, at most
    OUTPUT_MAX_CHARS characters)."""
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
                              "output": learner_facing(output), "status": PASSED if passed else FAILED})
        else:
            words = {"missing": "no file submitted", "not_started": "nothing implemented yet"}
            output = words.get(result.status, result.status)
            if result.message and result.status not in words:
                output += f": {result.message}"
            tests.append({"name": f"Kata {kata.number} · {kata.title}", "score": 0,
                          "max_score": maxima[kata.slug], "output": learner_facing(output), "status": FAILED})
    score = sum(r.score for r in results)
    lines = []
    for k, r, fact in zip(katas, results, facts or [{}] * len(katas)):
        known = [f"hints used: {fact['hints']}"] if fact.get("hints") else []
        known += [f"time to pass: {fact['time_to_pass']}"] if fact.get("time_to_pass") else []
        extra = f" ({'; '.join(known)})" if known else ""
        lines.append(f"Kata {k.number} ({k.title}): {r.status.replace('_', ' ')}, {r.score}/{maxima[k.slug]}{extra}")
        if r.message and r.status in ("error", "timeout"):
            lines.append("  " + r.message.strip().splitlines()[0])
    # the maximum: the tests' max_score summed
    return {"score": score, "output": learner_facing("\n".join(lines), limit=None), "tests": tests}


def learner_json(learner: Learner, results: list[KataResult], katas: list[Kata], maxima: dict[str, int]) -> dict:
    """<learner>.json: every kata's result with every check. It may be handed to the learner, so its messages
    go through learner_facing as results.json's do; `uses` names the files of earlier katas a kata loaded."""
    entries = []
    flat_ok = _flat_ok()
    for kata, result in zip(katas, results):
        data = result.to_json()
        data["slug"] = kata.slug
        data["max_score"] = max(result.max_score, maxima[kata.slug])
        data["message"] = learner_facing(data.get("message", ""))
        for check in data["checks"]:
            check["message"] = learner_facing(check.get("message", ""))
        if kata_dependencies(kata.slug):
            data["uses"] = kata_sources(learner, kata, flat_ok)
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
    or another learner's folder changes nobody's result but, at most, its own.

    A kata another kata loads (kata_dependencies: katas 3 and 4 for kata 5) that the learner did not hand in
    gets its pristine stub, as committed, in the copy: never the grader's working-tree file, which may be a
    mentor's own solution. The copy is marked (WORKING_COPY_MARK), so that `your_kata` there never
    falls back to the repository's katas/ folder."""
    import shutil

    from checker.core.manifest import load_katas

    loaded = {dep.slug: dep for kata in load_katas() for dep in kata_dependencies(kata.slug)}
    into.mkdir(parents=True, exist_ok=True)
    (into / WORKING_COPY_MARK).write_text("a learner's files, copied by `checker grade`: your_kata() loads only "
                                          "files in this folder\n", encoding="utf-8")
    for kata in load_katas():
        source = attempt_path(learner, kata, flat_ok.get(kata.slug, False))
        if not source.is_file():
            stub = pristine_bytes(kata.slug) if kata.slug in loaded else None
            if stub is not None:
                (into / kata.slug).mkdir(parents=True, exist_ok=True)
                (into / kata.slug / kata.module).write_bytes(stub)
            continue
        target = into / kata.slug
        target.mkdir(parents=True, exist_ok=True)
        beside = [source] if source.parent == learner.folder else sorted(source.parent.glob("*.py"))
        for path in beside:
            if path.is_file():
                shutil.copy2(path, target / (kata.module if path == source else path.name))
    return into


def hidden_from_attempts(work: Path, root: Path, out: Path) -> list[Path]:
    """What no attempt may see: the snapshot and every learner's copy (in `work`), the repository's
    references, hidden checks, history and the grader's own backups and progress, the graded folder
    (other learners' originals) and the output folder."""
    from checker.core.manifest import KATAS_DIR, REPO_ROOT, SOLUTIONS_DIR

    return [work / "hidden", work / "learners", work / "exchange", SOLUTIONS_DIR, *sorted(KATAS_DIR.glob("*/hidden")),
            REPO_ROOT / ".git", REPO_ROOT / ".kata-backups", REPO_ROOT / ".kata-progress.json",
            REPO_ROOT / ".kata-graphs", root, out]


def attempt_readable(snapshot: Path) -> list[Path]:
    """The snapshot's files an attempt's process loads, which a sandbox shows it read-only: each kata's public
    files (the lesson, the stub, kata 2's `suspects.py`) and the hidden files named in its `worker_reads`
    (probes, and what they load). Everything else of the snapshot stays hidden."""
    from checker.core.manifest import load_katas

    shown = []
    for kata in load_katas():
        folder = snapshot / "katas" / kata.slug
        shown += [p for p in sorted(folder.iterdir()) if p.is_file()]
        shown += [folder / "hidden" / name for name in kata.worker_reads if (folder / "hidden" / name).is_file()]
    return shown


def import_everything_first() -> None:
    """Import every module grading uses after the attempts ran (reviews, diffs, reports), so that nothing an
    attempt could have written is imported by this process afterwards."""
    import difflib  # noqa: F401
    import importlib

    for name in ("checker.learner.diffing", "checker.run.report", "checker.learner.backups", "checker.core.stubs",
                 "checker.mentor.gradescope", "checker.trusted.check_list", "checker.run.runner", "checker.run.batch",
                 "checker.run.warm", "checker.core.manifest", "checker.attempt.sandbox"):
        importlib.import_module(name)


def checker_files_fingerprint() -> dict[str, str]:
    """sha256 of every file of `checker/`, `katas/` and `solutions/` (what grading imports or reads)."""
    import hashlib

    from checker.core.manifest import KATAS_DIR, REPO_ROOT, SOLUTIONS_DIR

    prints = {}
    for top in (REPO_ROOT / "checker", KATAS_DIR, SOLUTIONS_DIR):
        for path in sorted(top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                prints[path.relative_to(REPO_ROOT).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return prints


def changed_files(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


def grade(root: Path, katas: list[Kata], *, out: Path | None = None, gradescope: bool = False,
          jobs: int | None = None, time_limit: float | None = None, seed: int, profile: str | None,
          quiet: bool = False, time_limits: dict[int, float] | None = None, single: bool | None = None,
          sandbox_mode: str = "auto", review_reference: bool = False) -> str:
    """Grade every learner under `root`; writes the files and returns the summary to print.

    Before any attempt runs: every module this process will use is imported, every learner's files are
    copied into a private working copy, the hidden checks and references into a snapshot, and the strongest
    sandbox the machine allows is planned (checker/attempt/sandbox.py). Attempts run from the copies, inside the
    sandbox; checks load from the snapshot. Afterwards the checker's own files must be as they were."""
    import tempfile

    from checker.attempt import sandbox as sandboxes
    from checker.core.manifest import load_katas
    from checker.run.runner import snapshot_hidden

    import_everything_first()
    before = checker_files_fingerprint()
    out = out or root.resolve().parent / f"{root.resolve().name}-grades"
    learners, found_single = find_learners(root, katas, out)
    single = found_single if single is None else single
    flat_ok = _flat_ok()
    originals = {(lr.name, k.slug): attempt_path(lr, k, flat_ok[k.slug]) for lr in learners for k in katas}
    with tempfile.TemporaryDirectory(prefix="fx-katas-grade-") as work_dir:
        work = Path(work_dir)
        work.chmod(0o711)  # attempt users pass through to their own copy; they cannot list or read the rest
        hidden = snapshot_hidden(work / "hidden")
        reveal = attempt_readable(hidden)
        sandboxes.lock_snapshot(hidden, reveal)
        for shared in ("learners", "exchange"):
            (work / shared).mkdir()
            (work / shared).chmod(0o711)
        plan = sandboxes.plan(hidden_from_attempts(work, root, out), want=sandbox_mode, reveal=reveal)
        if not quiet:
            print(f"grading {len(learners)} learner{'s' * (len(learners) != 1)} × {len(katas)} "
                  f"kata{'s' * (len(katas) != 1)}; {plan.describe()}", file=sys.stderr, flush=True)
        copies, confined = {}, {}
        for i, lr in enumerate(learners):
            folder = work / "learners" / f"{i:04d}"
            folder.mkdir()
            copies[lr.name] = working_copy(lr, folder, flat_ok)
            exchange = work / "exchange" / f"{i:04d}"
            exchange.mkdir()
            exchange.chmod(0o711)
            confined[lr.name] = plan.for_learner(folder, i, exchange)
            sandboxes.hand_over(folder, confined[lr.name].uid)
        tasks = [Task(k, copies[lr.name] / k.slug / k.module if originals[(lr.name, k.slug)].is_file()
                      else originals[(lr.name, k.slug)], lr.name, (time_limits or {}).get(k.number),
                      confined[lr.name])
                 for lr in learners for k in katas]
        # A warm server only this process can reach, started before any attempt runs (checker/run/warm.py). Its
        # warm-up costs about one cold start, so it pays off from a handful of attempts on.
        runs = sum(1 for task in tasks if task.attempt is not None and task.attempt.is_file())
        with PrivateServer() if runs >= WARM_FROM_RUNS else contextlib.nullcontext(PrivateServer()) as server:
            scored = score_all(tasks, jobs=jobs, seed=seed, profile=profile, time_limit=time_limit,
                               on_done=None if quiet else _progress_line, hidden_root=hidden,
                               launcher=server.launcher())
    changed = changed_files(before, checker_files_fingerprint())
    if changed:
        raise GradeError("the checker's own files changed while attempts ran, so no result can be trusted and "
                         "none was written: " + ", ".join(changed[:10]) + (" ..." if len(changed) > 10 else "")
                         + ". Grade again in a sandbox (checker grade says which one it used).")
    for task, result in zip(tasks, scored):  # report the learner's own path, not the working copy's
        result.attempt = str(originals[(task.label, task.kata.slug)])
    results = {(t.label, t.kata.slug): r for t, r in zip(tasks, scored)}
    maxima = _kata_max(results, katas)
    out.mkdir(parents=True, exist_ok=True)
    top = sum(maxima[k.slug] for k in katas)
    progress = {lr.name: learner_progress(lr) for lr in learners}
    reviews = {lr.name: write_review(lr, katas, results, maxima, progress[lr.name], out / "reviews",
                                     reference=review_reference) for lr in learners}
    with open(out / "gradebook.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["learner", *(k.slug for k in katas), "total", "max_total", *(f"{k.slug} status" for k in katas),
                         *(f"{k.slug} hints" for k in katas), *(f"{k.slug} time to pass" for k in katas), "review",
                         "isolation", *uses_columns(katas)])
        for lr in learners:
            row = [results[(lr.name, k.slug)] for k in katas]
            facts = [kata_facts(progress[lr.name], k) for k in katas]
            writer.writerow([lr.name, *(r.score for r in row), sum(r.score for r in row), top, *(r.status for r in row),
                             *(f["hints"] for f in facts), *(f["time_to_pass"] for f in facts),
                             reviews[lr.name].relative_to(out).as_posix(), plan.describe(),
                             *uses_cells(lr, katas, flat_ok)])
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
    return _summary(learners, katas, results, maxima, out, written) + "\n" + plan.describe()


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
