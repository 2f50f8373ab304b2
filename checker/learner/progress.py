"""The learner's progress file, `.kata-progress.json` at the repository root (FX_KATAS_PROGRESS moves it).

One record per kata, keyed by slug: hints used, the last full run of the learner's own file (status, score,
when, how long) and the fingerprint of what that run checked, so `checker all` can reuse it when nothing
changed. The file is versioned (`"version": 1`). A file that cannot be understood never stops a command:
it is moved aside (`.kata-progress.json.corrupt-<time>`, never deleted), one warning line is printed, and a
fresh file is started.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from datetime import datetime
from pathlib import Path

from checker.core.manifest import KATAS_DIR, REPO_ROOT, Kata

PROGRESS_ENV = "FX_KATAS_PROGRESS"
PROGRESS_VERSION = 1
_warned: set[str] = set()


def progress_path() -> Path:
    return Path(os.environ.get(PROGRESS_ENV) or REPO_ROOT / ".kata-progress.json")


def now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        print(f"checker: warning: {message}", file=sys.stderr)


def _aside_name(path: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    candidate, n = path.with_name(f"{path.name}.corrupt-{stamp}"), 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    return candidate


def _problem(data: object) -> str | None:
    """Why `data` is not a progress file this checker understands, or None."""
    if not isinstance(data, dict):
        return "it is not a JSON object"
    version = data.get("version")
    if not isinstance(version, int):
        return "it has no version number"
    if version > PROGRESS_VERSION:
        return f"it was written by a newer checker (version {version}; this one reads {PROGRESS_VERSION})"
    if version < 1 or not isinstance(data.get("katas"), dict):
        return "it has no `katas` table"
    return None


class Progress:
    """The progress file's contents; `save()` writes them back atomically."""

    def __init__(self, path: Path, data: dict, writable: bool = True) -> None:
        self.path, self.data, self.writable = path, data, writable

    @classmethod
    def load(cls, path: Path | None = None) -> "Progress":
        path = path or progress_path()
        fresh = {"version": PROGRESS_VERSION, "katas": {}}
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(path, fresh)
        except (OSError, UnicodeDecodeError) as exc:
            return cls._set_aside(path, fresh, f"cannot read it ({exc.__class__.__name__}: {exc})")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            return cls._set_aside(path, fresh, f"it is not valid JSON ({exc})")
        problem = _problem(data)
        if problem:
            return cls._set_aside(path, fresh, problem)
        data["katas"] = {k: v for k, v in data["katas"].items() if isinstance(v, dict)}
        return cls(path, data)

    @classmethod
    def _set_aside(cls, path: Path, fresh: dict, why: str) -> "Progress":
        aside = _aside_name(path)
        try:
            os.replace(path, aside)
        except OSError as exc:
            _warn_once(f"{path} is unusable ({why}) and could not be moved aside ({exc.strerror}); "
                       f"progress is not saved until you move or fix it")
            return cls(path, fresh, writable=False)
        _warn_once(f"{path.name} was unusable ({why}); kept it as {aside.name} and started a fresh one")
        return cls(path, fresh)

    def record(self, kata: Kata) -> dict:
        """The kata's record (created empty if missing)."""
        rec = self.data["katas"].setdefault(kata.slug, {})
        rec["number"] = kata.number
        return rec

    def peek(self, kata: Kata) -> dict:
        """The kata's record without creating it."""
        return self.data["katas"].get(kata.slug, {})

    def hints_used(self, kata: Kata) -> int:
        used = self.peek(kata).get("hints_used", 0)
        return used if isinstance(used, int) and used >= 0 else 0

    def save(self) -> None:
        if not self.writable:
            return
        self.data["version"] = PROGRESS_VERSION
        tmp = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes it private; the progress file is an ordinary file
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(self.data, out, indent=2, sort_keys=True)
                out.write("\n")
            os.replace(tmp, self.path)
        except OSError as exc:
            if tmp:
                Path(tmp).unlink(missing_ok=True)
            _warn_once(f"could not save progress to {self.path} ({exc.strerror or exc})")


def hints_used(kata: Kata) -> int:
    return Progress.load().hints_used(kata)


def record_result(kata: Kata, result, fingerprint: str, profile: str | None, progress: Progress | None = None) -> None:
    """Store the outcome of a full run of the learner's own file (saved at once unless `progress` is given)."""
    save = progress is None
    progress = progress or Progress.load()
    rec = progress.record(kata)
    stamp = now()
    rec.setdefault("first_run", stamp)
    runs = rec.get("runs")
    rec["runs"] = (runs if isinstance(runs, int) else 0) + 1
    rec.update(status=result.status, score=result.score, max_score=result.max_score, last_run=stamp,
               duration_s=result.duration_s, fingerprint=fingerprint, profile=profile or "learner",
               seed=result.seed, failing=[c.id for c in result.checks if c.status in ("fail", "error", "timeout")])
    if result.status == "pass" and not rec.get("passed_at"):
        rec["passed_at"] = stamp
    if save:
        progress.save()


def last_failing(kata: Kata) -> list[str]:
    """The checks that failed on the learner's last full run of this kata (run first next time)."""
    failing = Progress.load().record(kata).get("failing")
    return [str(c) for c in failing] if isinstance(failing, list) else []


def _digest(h: "hashlib._Hash", path: Path) -> None:
    h.update(str(path.name).encode())
    try:
        h.update(path.read_bytes())
    except OSError:
        h.update(b"<missing>")


# The parts of the checker a verdict depends on besides the kata's own files (what runs the checks, and the kit
# they are written with): a change to one of them makes every recorded run stale.
VERDICT_PARTS = ("kit", "trusted", "channel", "attempt", "run/runner.py")


def fingerprint_files(kata: Kata, attempt: Path) -> list[Path]:
    """Every file a run's verdict depends on: the attempt, the reference, the kata's hidden files, the shared kata
    code (the simulated NPU included) and the checker's running parts."""
    checker_dir = Path(__file__).resolve().parents[1]
    running = []
    for part in VERDICT_PARTS:
        path = checker_dir / part
        running += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return [attempt, kata.solution_path, *sorted((kata.folder / "hidden").rglob("*.py")),
            *sorted((KATAS_DIR / "common").rglob("*.py")), *running]


def fingerprint(kata: Kata, attempt: Path, seed: int, profile: str | None) -> str:
    """A hash of everything a run's verdict depends on (fingerprint_files), torch's version, the seed and the
    fuzz profile."""
    from checker.run.runner import installed_torch_version

    h = hashlib.sha256()
    h.update(f"{seed}|{profile or 'learner'}|".encode())
    h.update((installed_torch_version() or "no torch").encode())
    for path in fingerprint_files(kata, attempt):
        _digest(h, path)
    return h.hexdigest()


def examples_folder(kata) -> Path:
    """Where kata `kata`'s fuzz checks keep the learner's failing examples (checker.kit.checks.example_database): beside
    the progress file, so FX_KATAS_PROGRESS moves both."""
    return progress_path().parent / ".kata-examples" / kata.slug
