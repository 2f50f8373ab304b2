"""Carry the mutation reports across a change that only renames: modules moved, their imports respelled, their
paths rewritten in messages and comments.

A report is current while every file it was computed on is byte for byte the file it names (checker/core/
mutation_report.py). A move that changes no behaviour still changes bytes: `from katas.common.npu_aot import pack`
becomes `from katas.common.npu.aot import pack`. Re-running every kata's mutation testing for that costs hours and
proves nothing new, so `python -m checker mutate --carry-renames BASE --renames FILE` proves the narrower claim file
by file, and only then takes the new digest:

* the file as it was at git revision BASE has exactly the digest the report recorded (the verdicts were computed on
  it), and
* BASE's text with every rename of FILE applied, as literal text in the order given, is exactly the file's text now.

Any other change leaves the file stale, to be re-run with `make mutate N=k`. FILE holds one rename per line,
`old -> new`; blank lines and lines starting with `#` are skipped.
"""
from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Callable

from checker.core.manifest import REPO_ROOT, Kata
from checker.core.mutation_report import (
    alternatives,
    hand_mutants,
    load_report,
    mutant_digest,
    mutant_sha256,
    relative,
    report_path,
    sha256,
)


class RenameError(Exception):
    """The renames file or the base revision cannot be used (one line for the author)."""


def read_renames(path: Path) -> list[tuple[str, str]]:
    """The (old, new) pairs of a renames file, in order."""
    pairs = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise RenameError(f"cannot read {path}: {error.strerror}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        old, arrow, new = line.partition(" -> ")
        if not arrow or not old.strip() or not new.strip():
            raise RenameError(f"{path}:{number}: expected `old -> new`, got {line!r}")
        pairs.append((old.strip(), new.strip()))
    return pairs


def renamed(text: str, renames: list[tuple[str, str]]) -> str:
    for old, new in renames:
        text = text.replace(old, new)
    return text


def is_revision(base: str) -> bool:
    """`base` names a commit of this checkout."""
    return subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"],
                          capture_output=True).returncode == 0


def at_revision(base: str, name: str) -> bytes | None:
    """The file's bytes at git revision `base`, or None where it did not exist."""
    shown = subprocess.run(["git", "-C", str(REPO_ROOT), "show", f"{base}:{name}"], capture_output=True)
    return shown.stdout if shown.returncode == 0 else None


def file_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def carried_digest(name: str, recorded: str, base: str, renames: list[tuple[str, str]],
                   digest: Callable[[bytes], str] = file_digest) -> str | None:
    """The file's digest now (`digest` of its bytes), when it differs from what was recorded at `base` only by
    `renames`; else None."""
    path = REPO_ROOT / name
    before = at_revision(base, name)
    if before is None or not path.is_file() or digest(before) != recorded:
        return None
    now = path.read_bytes()
    if renamed(before.decode("utf-8"), renames).encode("utf-8") != now:
        return None
    return digest(now)


def carry(kata: Kata, base: str, renames: list[tuple[str, str]], *, write: bool) -> tuple[list[str], list[str]]:
    """(files carried across the renames, files still stale) for the kata's report; writes it when `write`."""
    report = load_report(kata)
    if report is None:
        return [], []
    carried, stale = [], []

    def settle(name: str, recorded: str, current: str, digest: Callable[[bytes], str] = file_digest) -> str:
        if current == recorded:
            return recorded
        new = carried_digest(name, recorded, base, renames, digest)
        (carried if new else stale).append(name)
        return new or recorded

    for name, recorded in list(report.files.items()):
        path = REPO_ROOT / name
        report.files[name] = settle(name, recorded, sha256(path) if path.is_file() else "")
    present = {relative(p): p for p in hand_mutants(kata)}
    for mutant in report.hand_mutants:
        path = present.get(mutant.file)
        mutant.sha256 = settle(mutant.file, mutant.sha256, mutant_sha256(path) if path else "", mutant_digest)
    present = {relative(p): p for p in alternatives(kata)}
    for alternative in report.alternatives:
        path = present.get(alternative.file)
        alternative.sha256 = settle(alternative.file, alternative.sha256, sha256(path) if path else "")
    if write and carried:
        report_path(kata).write_text(report.to_toml(), encoding="utf-8")
    return carried, stale


def run_command(katas: list[Kata], base: str, renames_file: Path, *, write: bool) -> int:
    """What `python -m checker mutate --carry-renames BASE --renames FILE` does: 0 when every report is current."""
    renames = read_renames(renames_file)
    if not is_revision(base):
        raise RenameError(f"{base!r} is not a git revision of this checkout")
    left = 0
    for kata in katas:
        carried, stale = carry(kata, base, renames, write=write)
        where = relative(report_path(kata))
        verb = "carried" if write else "would carry"
        print(f"{where}: {verb} {len(carried)} file(s) across the renames"
              + (f"; {len(stale)} changed otherwise (run `make mutate N={kata.number}`): {', '.join(stale)}"
                 if stale else ""))
        left += len(stale)
    return 1 if left else 0
