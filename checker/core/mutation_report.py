"""A kata's mutation report, `katas/NN_slug/hidden/mutation.toml`: read, write, and tell whether it is current.

Written by `python -m checker mutate N --write` (`make mutate N=k`); read by the self-tests (tests/test_mutation.py)
without importing torch or cosmic-ray. A report is current when every file it names (the solution, the checks,
what they import) still has the sha256 it was computed on, and every hand-written mutant it lists is the file on
disk. It also records every check each correct alternative (tests/alternatives/<slug>/) fails, which must be
none: `make test` scores one alternative per kata live and reads the rest from here. Survivors carry a `reason`:
why the mutant behaves the same by the lesson's contract. A new survivor gets UNTRIAGED, and a re-run keeps the
reasons of survivors whose id is still there.
"""
from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from checker.core.manifest import REPO_ROOT, Kata

REPORT_NAME = "mutation.toml"
SCHEMA = 1
UNTRIAGED = "UNTRIAGED"
MUTANTS_DIR = REPO_ROOT / "tests" / "mutants"
ALTERNATIVES_DIR = REPO_ROOT / "tests" / "alternatives"


def report_path(kata: Kata) -> Path:
    return kata.folder / "hidden" / REPORT_NAME


def hand_mutants(kata: Kata) -> list[Path]:
    """The kata's hand-written mutants, `tests/mutants/<slug>/*.py`."""
    return sorted((MUTANTS_DIR / kata.slug).glob("*.py"))


def alternatives(kata: Kata) -> list[Path]:
    """The kata's correct attempts written unlike the reference, `tests/alternatives/<slug>/*.py`."""
    return sorted((ALTERNATIVES_DIR / kata.slug).glob("*.py"))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def mutant_sha256(path: Path) -> str:
    """sha256 of a hand-written mutant without its `KILLED_BY = ...` statement: the checks never read KILLED_BY, so
    correcting it to what the report recorded does not make the report's verdict on the mutant stale."""
    return mutant_digest(path.read_bytes())


def mutant_digest(data: bytes) -> str:
    """mutant_sha256 of a file holding `data`."""
    import ast

    source = data.decode().replace("\r\n", "\n").replace("\r", "\n")  # as Path.read_text reads it
    lines = source.splitlines(keepends=True)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return hashlib.sha256(data).hexdigest()
    for statement in tree.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "KILLED_BY" for t in targets):
            del lines[statement.lineno - 1:statement.end_lineno]
            break
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def relative(path: Path) -> str:
    return Path(path).resolve().relative_to(REPO_ROOT).as_posix()


@dataclass
class Survivor:
    id: str
    operator: str
    function: str
    line: int
    diff: str
    reason: str = UNTRIAGED
    note: str = ""  # e.g. "killed by nothing in the learner profile either"

    @property
    def triaged(self) -> bool:
        return bool(self.reason.strip()) and self.reason.strip() != UNTRIAGED


@dataclass
class HandMutant:
    file: str
    sha256: str
    failing: list[str]


@dataclass
class Report:
    kata: int
    slug: str
    tool: str
    tool_version: str
    date: str
    seed: int
    files: dict[str, str]  # repository path -> sha256 the verdicts were computed on
    operators: list[str]
    totals: dict[str, float]
    checks: dict[str, dict[str, float]] = field(default_factory=dict)  # id -> {"kills", "seconds"}
    survivors: list[Survivor] = field(default_factory=list)
    hand_mutants: list[HandMutant] = field(default_factory=list)
    alternatives: list[HandMutant] = field(default_factory=list)  # `failing` must be empty for every one

    # --- freshness -----------------------------------------------------------------------------------------

    def stale_files(self) -> list[str]:
        """Each file the report was computed on that changed or is gone, as a sentence."""
        problems = []
        for name, digest in self.files.items():
            path = REPO_ROOT / name
            if not path.is_file():
                problems.append(f"{name} is gone")
            elif sha256(path) != digest:
                problems.append(f"{name} changed (sha256 {digest[:12]}... in the report, {sha256(path)[:12]}... now)")
        return problems

    def stale_hand_mutants(self, kata: Kata) -> list[str]:
        """Each hand-written mutant that is new, gone or changed since the report, as a sentence."""
        return _stale_scored_files(self.hand_mutants, hand_mutants(kata), mutant_sha256)

    def stale_alternatives(self, kata: Kata) -> list[str]:
        """Each correct alternative that is new, gone or changed since the report, as a sentence."""
        return _stale_scored_files(self.alternatives, alternatives(kata), sha256)

    def untriaged(self) -> list[Survivor]:
        return [s for s in self.survivors if not s.triaged]

    # --- text ------------------------------------------------------------------------------------------------

    def to_toml(self) -> str:
        lines = [
            f"# Mutation report for kata {self.kata} ({self.slug}), written by `python -m checker mutate {self.kata} --write`.",
            f"# Regenerate it after changing the solution, the checks or tests/mutants/{self.slug}/: make mutate N={self.kata}",
            "# Every [[survivor]] is a mutant of the solution that passed every check (the deep profile too). Triage each:",
            "# equivalent by the lesson's contract -> replace UNTRIAGED with a one-line reason (re-runs keep it);",
            f"# not equivalent -> a check is missing: add it, and a mutant under tests/mutants/{self.slug}/ that only it kills.",
            f"schema = {SCHEMA}",
            f"kata = {self.kata}",
            f"slug = {_string(self.slug)}",
            f"tool = {_string(self.tool)}",
            f"tool_version = {_string(self.tool_version)}",
            f"date = {_string(self.date)}",
            f"seed = {self.seed}",
            "operators = [",
            *[f"  {_string(name)}," for name in self.operators],
            "]",
            "",
            "[files]  # sha256 of what the verdicts were computed on",
            *[f"{_string(name)} = {_string(digest)}" for name, digest in sorted(self.files.items())],
            "",
            "[totals]",
            *[f"{key} = {_number(value)}" for key, value in self.totals.items()],
            "",
            "[checks]  # per check: mutants it was the first to kill, and its seconds on the reference (orders the next run)",
            *[f"{check} = {{ kills = {int(stats.get('kills', 0))}, seconds = {_number(stats.get('seconds', 0.0))} }}"
              for check, stats in self.checks.items()],
        ]
        for survivor in self.survivors:
            lines += ["", "[[survivor]]", f"id = {_string(survivor.id)}", f"operator = {_string(survivor.operator)}",
                      f"function = {_string(survivor.function)}", f"line = {survivor.line}",
                      f"diff = {_multiline(survivor.diff)}"]
            if survivor.note:
                lines.append(f"note = {_string(survivor.note)}")
            lines.append(f"reason = {_string(survivor.reason)}")
        for mutant in self.hand_mutants:
            lines += ["", "[[hand_mutant]]  # every check it fails, learner profile", f"file = {_string(mutant.file)}",
                      f"sha256 = {_string(mutant.sha256)}", f"failing = {json.dumps(sorted(mutant.failing))}"]
        for alternative in self.alternatives:
            lines += ["", "[[alternative]]  # a correct attempt unlike the reference: every check it fails (none), learner profile",
                      f"file = {_string(alternative.file)}", f"sha256 = {_string(alternative.sha256)}",
                      f"failing = {json.dumps(sorted(alternative.failing))}"]
        return "\n".join(lines) + "\n"

    @classmethod
    def from_toml(cls, text: str) -> "Report":
        data = tomllib.loads(text)
        return cls(
            kata=data["kata"], slug=data["slug"], tool=data["tool"], tool_version=data["tool_version"],
            date=data["date"], seed=data["seed"], files=dict(data["files"]), operators=list(data["operators"]),
            totals=dict(data["totals"]), checks={k: dict(v) for k, v in data.get("checks", {}).items()},
            survivors=[Survivor(**s) for s in data.get("survivor", [])],
            hand_mutants=[HandMutant(**m) for m in data.get("hand_mutant", [])],
            alternatives=[HandMutant(**m) for m in data.get("alternative", [])],
        )


def _stale_scored_files(recorded: list[HandMutant], on_disk: list[Path], digest) -> list[str]:
    """Each file of tests/ the report scored that is new, gone or changed (by `digest`) since, as a sentence."""
    kept = {m.file: m for m in recorded}
    present = {relative(p): p for p in on_disk}
    problems = [f"{name} is new" for name in sorted(set(present) - set(kept))]
    problems += [f"{name} is gone" for name in sorted(set(kept) - set(present))]
    problems += [f"{name} changed" for name in sorted(set(kept) & set(present))
                 if digest(present[name]) != kept[name].sha256]
    return problems


def load_report(kata: Kata) -> Report | None:
    path = report_path(kata)
    if not path.is_file():
        return None
    return Report.from_toml(path.read_text(encoding="utf-8"))


def check_seconds(path: Path) -> dict[str, float]:
    """Each check's seconds on the reference as the report at `path` records them ({} when there is no readable
    report). The checks process reads this at every start, so it parses the [checks] table alone."""
    try:
        known = tomllib.loads(path.read_text(encoding="utf-8")).get("checks", {})
    except (OSError, ValueError):
        return {}
    return {check: float(stats.get("seconds", 0.0)) for check, stats in known.items() if isinstance(stats, dict)}


def keep_reasons(new: Report, old: Report | None) -> None:
    """Carry over the reasons written for survivors whose id is in both reports."""
    if old is None:
        return
    reasons = {s.id: s.reason for s in old.survivors if s.triaged}
    for survivor in new.survivors:
        survivor.reason = reasons.get(survivor.id, survivor.reason)


def _string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text, ensure_ascii=False)


def _multiline(text: str) -> str:
    """A TOML multi-line literal string when the text allows it (readable diffs), else a basic string."""
    if "'''" in text or any(ord(c) < 32 and c not in "\n\t" for c in text):
        return _string(text)
    return "'''\n" + text + "'''"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and not isinstance(value, float) else f"{float(value):.2f}"
