"""The kata manifest (`katas/katas.toml`): the single description of every kata.

The CLI, the self-tests and the README table read it; nothing else lists katas.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]  # checker/core/manifest.py
KATAS_DIR = REPO_ROOT / "katas"
SOLUTIONS_DIR = REPO_ROOT / "solutions"
MANIFEST_PATH = KATAS_DIR / "katas.toml"
HIDDEN_CHECKS = Path("hidden") / "checks.py"


class ManifestError(ValueError):
    """The manifest, or a kata it names, is malformed or missing files."""


@dataclass(frozen=True)
class Kata:
    number: int
    slug: str
    title: str
    module: str
    stages: tuple[str, ...]
    time_limit: float
    # hidden files the attempt's own process loads (probes; kata 2's hidden suspects, which the attempt's finder
    # runs on): a grading sandbox shows these to the attempt, read-only, and no other hidden file
    worker_reads: tuple[str, ...] = ("probes.py",)
    # earlier katas whose files this kata's stub imports (`your_kata`): the learner finishes those first
    builds_on: tuple[int, ...] = ()

    @property
    def folder(self) -> Path:
        return KATAS_DIR / self.slug

    @property
    def stub_path(self) -> Path:
        """The learner's file: the only file in the kata they edit."""
        return self.folder / self.module

    @property
    def solution_path(self) -> Path:
        return SOLUTIONS_DIR / self.slug / self.module

    @property
    def checks_path(self) -> Path:
        return self.folder / HIDDEN_CHECKS

    @property
    def lesson_path(self) -> Path:
        return self.folder / "README.md"

    @property
    def hints_path(self) -> Path:
        return self.folder / "hints.md"


def _parse_kata(entry: dict, where: str) -> Kata:
    try:
        kata = Kata(
            number=int(entry["number"]),
            slug=str(entry["slug"]),
            title=str(entry["title"]),
            module=str(entry["module"]),
            stages=tuple(entry["stages"]),
            time_limit=float(entry["time_limit"]),
            worker_reads=tuple(entry.get("worker_reads", ("probes.py",))),
            builds_on=tuple(int(n) for n in entry.get("builds_on", ())),
        )
    except KeyError as missing:
        raise ManifestError(f"{where}: missing key {missing}") from None
    if not kata.stages:
        raise ManifestError(f"{where}: `stages` is empty")
    if any(n >= kata.number for n in kata.builds_on):
        raise ManifestError(f"{where}: builds_on {list(kata.builds_on)} names a kata that does not come before "
                            f"kata {kata.number}")
    return kata


@cache
def load_katas(path: Path = MANIFEST_PATH) -> tuple[Kata, ...]:
    """Every kata in teaching order. Raises ManifestError naming the file and the bad entry."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ManifestError(f"{path}: {exc}") from None
    katas = tuple(_parse_kata(entry, f"{path} [[kata]] #{i + 1}") for i, entry in enumerate(data.get("kata", [])))
    numbers = [k.number for k in katas]
    if len(set(numbers)) != len(numbers):
        raise ManifestError(f"{path}: kata numbers repeat: {numbers}")
    return tuple(sorted(katas, key=lambda k: k.number))


def get_kata(number: int) -> Kata:
    """The kata numbered `number`, or ManifestError listing the numbers that exist."""
    for kata in load_katas():
        if kata.number == number:
            return kata
    known = ", ".join(str(k.number) for k in load_katas())
    raise ManifestError(f"there is no kata {number}; katas are numbered {known}")


def display_path(path: str | Path) -> str:
    """`path` as the person at the terminal reads it: relative to where they are, when it is below there."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
