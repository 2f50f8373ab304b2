"""Reset and restore: put the pristine stub back without ever losing an attempt.

Every file the tools overwrite is first copied to `.kata-backups/<slug>/<timestamp>-<module>`
(FX_KATAS_BACKUPS moves the folder). Which stub is pristine is checker/core/stubs.py's to say; with neither git
nor a snapshot to find it, reset refuses and changes nothing.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from checker.core.manifest import Kata, display_path, load_katas
from checker.core.stubs import BackupError, write_atomically, backups_root, pristine_stub

# --- backups ---------------------------------------------------------------------------------------------------

STAMP_FORMAT = "%Y%m%d-%H%M%S"  # a backup's name starts with the time it was made


@dataclass(frozen=True)
class Backup:
    slug: str
    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    def describe(self) -> str:
        """One line: the name, when the backup was made (the time its name starts with) and when the learner
        last edited the file it copies (the copy keeps that file's modification time)."""
        lines = self.path.read_bytes().count(b"\n")
        edited = datetime.fromtimestamp(self.path.stat().st_mtime).strftime("%Y-%m-%d %H:%M:%S")
        try:
            saved = datetime.strptime(self.name[:15], STAMP_FORMAT).strftime("%Y-%m-%d %H:%M:%S")
        except ValueError:  # a file someone put in the folder by hand
            return f"{self.name:<40} last edited {edited}   {lines} lines"
        return f"{self.name:<40} saved {saved}, last edited {edited}   {lines} lines"


def list_backups(slug: str) -> list[Backup]:
    """A kata's backups, oldest first (names start with their timestamp)."""
    folder = backups_root() / slug
    if not folder.is_dir():
        return []
    return [Backup(slug, p) for p in sorted(folder.iterdir()) if p.is_file() and not p.name.startswith(".")]


def back_up(kata: Kata) -> Backup:
    """Copy the learner's current file into the kata's backup folder; returns the new backup."""
    folder = backups_root() / kata.slug
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime(STAMP_FORMAT)
    target, n = folder / f"{stamp}-{kata.module}", 1
    while target.exists():
        n += 1
        target = folder / f"{stamp}-{n}-{kata.module}"
    data = kata.stub_path.read_bytes()
    shutil.copy2(kata.stub_path, target)
    if target.read_bytes() != data:
        raise BackupError(f"could not back up {display_path(kata.stub_path)} to {display_path(target)}; nothing was changed")
    return Backup(kata.slug, target)


def _saved_already(kata: Kata, data: bytes) -> Backup | None:
    return next((b for b in list_backups(kata.slug) if b.path.read_bytes() == data), None)


def reset(kata: Kata) -> str:
    """Back the learner's file up, then put the pristine stub in its place."""
    pristine, source = pristine_stub(kata)
    stub = kata.stub_path
    shown = display_path(stub)
    saved = None
    if stub.is_file():
        if stub.read_bytes() == pristine:
            return f"{shown} is already the pristine stub: nothing to reset."
        saved = back_up(kata)
    stub.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(stub, pristine)
    if saved is None:
        return f"{shown} was missing: restored the pristine stub (from {source})."
    return (f"Saved your attempt as {display_path(saved.path)}\n"
            f"Restored the pristine {shown} (from {source}).\n"
            f"Changed your mind? `make restore N={kata.number} BACKUP={saved.name}` puts it back.")


def find_backup(kata: Kata, name: str) -> Backup:
    backups = list_backups(kata.slug)
    if not backups:
        raise BackupError(f"kata {kata.number} has no backups in {display_path(backups_root() / kata.slug)}")
    if name in ("latest", "last"):
        return backups[-1]
    exact = [b for b in backups if b.name == name or str(b.path) == name]
    matches = exact or [b for b in backups if b.name.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    listing = f"`make restore N={kata.number}` lists them"
    if not matches:
        raise BackupError(f"kata {kata.number} has no backup named {name!r}; {listing}")
    raise BackupError(f"{name!r} matches {len(matches)} backups of kata {kata.number}; give more of the name ({listing})")


def _is_pristine(kata: Kata, data: bytes) -> bool:
    try:
        return pristine_stub(kata)[0] == data
    except (BackupError, OSError):
        return False


def restore(kata: Kata, name: str) -> str:
    """Put backup `name` back as the learner's file, first backing up the current file unless it is saved already."""
    chosen = find_backup(kata, name)
    data = chosen.path.read_bytes()
    stub = kata.stub_path
    shown = display_path(stub)
    lines = []
    if stub.is_file():
        current = stub.read_bytes()
        if current == data:
            return f"{shown} already holds {chosen.name}: nothing to do."
        already = _saved_already(kata, current)
        if already is not None:
            lines.append(f"Your current {shown} is saved already as {display_path(already.path)}")
        elif _is_pristine(kata, current):
            lines.append(f"Your current {shown} is the pristine stub (`make reset N={kata.number}` brings it back).")
        else:
            saved = back_up(kata)
            lines.append(f"Saved your current {shown} as {display_path(saved.path)}")
    write_atomically(stub, data)
    lines.append(f"Restored {shown} from {display_path(chosen.path)}.")
    return "\n".join(lines)


def listing(katas: list[Kata] | None = None) -> str:
    """Every backup, grouped by kata (only `katas` when given)."""
    root = backups_root()
    selected = katas if katas is not None else list(load_katas())
    out = []
    for kata in selected:
        backups = list_backups(kata.slug)
        if not backups:
            continue
        out.append(f"kata {kata.number} · {kata.title}  ({display_path(kata.stub_path)})")
        out += [f"  {b.describe()}" for b in backups]
    if katas is None and root.is_dir():  # folders of katas no longer in the manifest: still listed, never hidden
        known = {k.slug for k in selected}
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name not in known):
            backups = list_backups(folder.name)
            if backups:
                out.append(f"{folder.name} (not a kata in katas.toml any more)")
                out += [f"  {b.describe()}" for b in backups]
    if not out:
        which = f"kata {katas[0].number}" if katas and len(katas) == 1 else "any kata"
        return (f"No backups of {which} yet in {display_path(root)}: `make reset N=<kata>` saves your attempt "
                f"there before restoring the stub.")
    number = str(katas[0].number) if katas and len(katas) == 1 else "<kata>"
    return "\n".join([f"Backups in {display_path(root)} (oldest first):", *out, "",
                      f"Put one back: `make restore N={number} BACKUP=<name>` (your current file is backed up first)."])
