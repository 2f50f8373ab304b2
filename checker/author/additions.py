"""Carry a kata's mutation report across additions to a file it only depends on: another kata's reference it builds
on, or a module of katas/common that gained a function.

A report is current while every file it was computed on is byte for byte the file it names (checker/core/
mutation_report.py). Kata 5's report names kata 3's reference because kata 5's backend calls kata 3's pass; when kata
3's lesson grows a report function, every verdict of kata 5 stays what it was, yet the digest changed, and the re-run
costs an hour of two cores. `python -m checker mutate --carry-additions BASE` proves the narrower claim file by file,
and only then takes the new digest:

* the file is not the kata's own (its solution, lesson, stub and checks are always re-run), and the file as it was at
  git revision BASE has exactly the digest the report recorded;
* every top-level statement of BASE's file is in the file now, unchanged (compared as syntax trees, so comments and
  the module's docstring may change), in the same order;
* every statement added is an import, a function or class without decorators, or an assignment to a new name whose
  value calls nothing: none runs code when the module is imported, and none defines a name BASE's file defined, so no
  existing function can see a different value;
* no file of the kata itself (its checks, stub, solution, hand-written mutants and alternatives) reaches a name the
  additions define the ways code reaches another module's name (as an attribute, in an import, or in quotes, as
  getattr takes it): nothing the verdicts ran can see them.

Any other change leaves the file stale, to be re-run with `make mutate N=k`.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from checker.core.manifest import REPO_ROOT, Kata
from checker.author.renames import at_revision, file_digest, is_revision
from checker.core.mutation_report import alternatives, hand_mutants, load_report, relative, report_path, sha256


class AdditionsError(Exception):
    """The base revision cannot be used (one line for the author)."""


def _statements(source: bytes) -> list[ast.stmt] | None:
    """The module's top-level statements without its docstring, or None when it does not parse."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return None
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body


def _defined(statement: ast.stmt) -> set[str]:
    """The module-level names a statement binds."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
    targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
    return {t.id for t in targets if isinstance(t, ast.Name)}


def _runs_nothing_on_import(statement: ast.stmt) -> bool:
    """An import, an undecorated def or class, or `NAME = value` / `NAME: type = value` where value calls nothing."""
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):  # defaults and annotations run at def time
        signature = [statement.args] + ([statement.returns] if statement.returns else [])
        return not statement.decorator_list and not any(
            isinstance(n, ast.Call) for part in signature for n in ast.walk(part))
    if isinstance(statement, ast.ClassDef):
        return not statement.decorator_list and not statement.bases and not statement.keywords and all(
            isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Pass)) or
            (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)) for s in statement.body)
    if isinstance(statement, (ast.Assign, ast.AnnAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return (statement.value is not None and all(isinstance(t, ast.Name) for t in targets)
                and not any(isinstance(n, (ast.Call, ast.Lambda, ast.NamedExpr)) for n in ast.walk(statement.value)))
    return False


def added_names(before: bytes, now: bytes) -> set[str] | None:
    """The names the additions define, when `now` is `before` plus additions only (the rules above); else None."""
    old, new = _statements(before), _statements(now)
    if old is None or new is None:
        return None
    old_dumps = [ast.dump(s) for s in old]
    added, position = [], 0
    for statement in new:
        if position < len(old_dumps) and ast.dump(statement) == old_dumps[position]:
            position += 1
        else:
            added.append(statement)
    if position != len(old_dumps) or not all(_runs_nothing_on_import(s) for s in added):
        return None
    names = set().union(*map(_defined, added)) if added else set()
    existing = set().union(*map(_defined, old)) if old else set()
    return None if names & existing else names


def reaches(text: str, names: set[str]) -> bool:
    """`text` reaches one of another module's `names`: as an attribute, in an import, or in quotes (getattr)."""
    either = "|".join(map(re.escape, sorted(names)))
    return re.search(rf"\.\s*({either})\b|\bimport\b[^\n]*\b({either})\b|['\"]({either})['\"]", text) is not None


def _own_files(kata: Kata) -> list[Path]:
    """The kata's own files, whose verdicts a change to them always re-runs, and which may not name the additions."""
    own = [*(REPO_ROOT / "katas" / kata.slug).rglob("*.py"), *(REPO_ROOT / "solutions" / kata.slug).rglob("*.py"),
           *hand_mutants(kata), *alternatives(kata)]
    return [p for p in own if p.is_file()]


def _is_own(kata: Kata, name: str) -> bool:
    return name.startswith((f"katas/{kata.slug}/", f"solutions/{kata.slug}/", f"tests/mutants/{kata.slug}/",
                            f"tests/alternatives/{kata.slug}/"))


def carried_digest(kata: Kata, name: str, recorded: str, base: str) -> str | None:
    """The file's digest now, when it is another kata's or common file that differs from its text at `base` (which
    has the recorded digest) by additions the kata's files never name; else None."""
    path = REPO_ROOT / name
    if _is_own(kata, name) or not name.endswith(".py") or not path.is_file():
        return None
    before = at_revision(base, name)
    if before is None or file_digest(before) != recorded:
        return None
    names = added_names(before, path.read_bytes())
    if names is None:
        return None
    if names and any(reaches(p.read_text(encoding="utf-8", errors="replace"), names) for p in _own_files(kata)):
        return None
    return sha256(path)


def carry(kata: Kata, base: str, *, write: bool) -> tuple[list[str], list[str]]:
    """(files carried across additions, files still stale) for the kata's report; writes it when `write`."""
    report = load_report(kata)
    if report is None:
        return [], []
    carried, stale = [], []
    for name, recorded in list(report.files.items()):
        path = REPO_ROOT / name
        if path.is_file() and sha256(path) == recorded:
            continue
        new = carried_digest(kata, name, recorded, base)
        (carried if new else stale).append(name)
        report.files[name] = new or recorded
    if write and carried:
        report_path(kata).write_text(report.to_toml(), encoding="utf-8")
    return carried, stale


def run_command(katas: list[Kata], base: str, *, write: bool) -> int:
    """What `python -m checker mutate --carry-additions BASE` does: 0 when every report is current."""
    if not is_revision(base):
        raise AdditionsError(f"{base!r} is not a git revision of this checkout")
    left = 0
    for kata in katas:
        carried, stale = carry(kata, base, write=write)
        verb = "carried" if write else "would carry"
        print(f"{relative(report_path(kata))}: {verb} {len(carried)} file(s) across additions"
              + (f"; {len(stale)} changed otherwise (run `make mutate N={kata.number}`): {', '.join(stale)}"
                 if stale else ""))
        left += len(stale)
    return 1 if left else 0
