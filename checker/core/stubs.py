"""The learner's stub: what an untouched one looks like, where the pristine one is kept, and the backups folder.

The pristine stub is the committed one: the newest version of `katas/<slug>/<module>` in git history that is still
all stubs (so a learner who commits their work still gets the original back), else the HEAD version. Outside a git
checkout the tools use a snapshot of the stub taken the first time any command saw it untouched
(`.kata-backups/.pristine/<slug>/<module>`). Reset and restore (checker/learner/backups.py), scoring (an untouched
stub is `not_started` without running) and grading (the stub a learner started from) all ask here.
"""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path

from checker.core.manifest import REPO_ROOT, Kata, display_path

BACKUPS_ENV = "FX_KATAS_BACKUPS"
PRISTINE_DIR = ".pristine"


class BackupError(Exception):
    """A reset, a restore or a pristine stub that cannot be had safely; nothing was changed (one line for the
    learner)."""


def backups_root() -> Path:
    return Path(os.environ.get(BACKUPS_ENV) or REPO_ROOT / ".kata-backups")


# --- what a pristine stub looks like ---------------------------------------------------------------------------

def _is_stub_body(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """docstring (optional) + `raise NotImplementedError(...)` and nothing else."""
    body = list(func.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def looks_pristine(source: bytes) -> bool:
    """True when every public top-level function is a NotImplementedError stub (and there is at least one)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    public = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_")]
    return any(_is_stub_body(f) for f in functions) and all(_is_stub_body(f) for f in public)


# --- finding the pristine stub ---------------------------------------------------------------------------------

def _git(*args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _from_git(kata: Kata) -> tuple[bytes, str] | None:
    rel = kata.stub_path.relative_to(REPO_ROOT).as_posix()
    log = _git("log", "--format=%H", "-n", "50", "HEAD", "--", rel)
    if log is None or log.returncode != 0:
        return None
    commits = log.stdout.decode().split()
    head = None
    for i, commit in enumerate(commits):
        shown = _git("show", f"{commit}:./{rel}")
        if shown is None or shown.returncode != 0:
            continue  # the commit deleted the file
        if head is None and i == 0:
            head = shown.stdout
        if looks_pristine(shown.stdout):
            return shown.stdout, "git HEAD" if i == 0 else f"git commit {commit[:10]}, the newest one where it is untouched"
    return (head, "git HEAD") if head is not None else None


def snapshot_path(kata: Kata) -> Path:
    return backups_root() / PRISTINE_DIR / kata.slug / kata.module


def remember_pristine(kata: Kata) -> None:
    """Snapshot the stub while it is untouched, for checkouts without git. Never overwrites a snapshot."""
    snap = snapshot_path(kata)
    if snap.exists():
        return
    try:
        source = kata.stub_path.read_bytes()
        if looks_pristine(source):
            snap.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(snap, source)
    except OSError:
        pass  # a snapshot is a convenience; git is the main source


def pristine_stub(kata: Kata) -> tuple[bytes, str]:
    """(content, where it came from) of the kata's pristine stub, or BackupError saying why there is none."""
    found = _from_git(kata)
    if found is not None:
        return found
    snap = snapshot_path(kata)
    if snap.is_file():
        return snap.read_bytes(), f"the snapshot {display_path(snap)}"
    raise BackupError(
        f"cannot find the pristine {display_path(kata.stub_path)}: this folder is not a git checkout with that file "
        f"committed, and no snapshot of the untouched stub exists in {display_path(backups_root() / PRISTINE_DIR)}; "
        f"nothing was changed (get the file again from the kata repository)"
    )


def write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.fx-katas-tmp")
    tmp.write_bytes(data)
    if path.exists():
        shutil.copymode(path, tmp)
    os.replace(tmp, path)
