"""Gradescope's autograder: `python -m checker gradescope-bundle` (`make gradescope`) writes `autograder.zip`,
and inside Gradescope's container `run_autograder` calls `python -m checker.mentor.gradescope run`, which grades the
learner's submission and writes `results/results.json`.

The layout and the results format are Gradescope's (https://gradescope-autograders.readthedocs.io/en/latest/specs/):
the zip holds `setup.sh` and `run_autograder` at its root, Gradescope unpacks it into /autograder/source, runs
setup.sh once when it builds the image, and run_autograder for every submission, with the learner's files in
/autograder/submission. checker/mentor/schemas/gradescope-results.schema.json is that page's results format as a
JSON Schema; the self-tests validate every results.json the checker writes against it.

The bundle is built from the repository as committed (`git archive` of HEAD; --allow-dirty packs the working
tree), so a mentor's own solved stubs never ship. It carries the hidden checks and the references, which stay on
Gradescope's side (setup.sh makes them readable by root only): a learner sees the results only. Grading goes
through `checker grade` (checker/mentor/grade.py): a private copy of the submission, a snapshot of the checks, the
trusted-grading boundary, a time limit per kata.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from checker.core.manifest import REPO_ROOT, Kata

CONFIG_NAME = "fx-katas-autograder.json"
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "gradescope-results.schema.json"
MAX_UNPACKED_BYTES = 50 << 20  # a submission's zip files, unpacked: far more than any kata file needs
SEARCH_DEPTH = 4  # folders to look down for the kata files (a zip of a clone inside a folder of its own)
BUNDLED = ("checker", "katas", "solutions")  # folders of the repository the autograder needs
BUNDLED_FILES = ("pyproject.toml", "README.md")
COUNTEREXAMPLE_MARK = "Smallest failing example found"

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu): a virtual environment
# with the pinned torch CPU wheel and the checker. FX_KATAS_TORCH_INDEX names the index of torch's CPU wheels
# (empty: the default index, for a machine whose pip is already set up for them).
# As root it also installs bubblewrap (apt-get, quietly; setup goes on without it) and adds the unprivileged
# system user fxkatas that attempts can run as (FX_KATAS_SYSTEM_SETUP=0 skips both, on a machine of your own).
# Last, the references (solutions/) and every katas/*/hidden/ folder are made readable by their owner only.
set -euo pipefail
ROOT="${FX_KATAS_AUTOGRADER_ROOT:-/autograder}"
INDEX="${FX_KATAS_TORCH_INDEX-https://download.pytorch.org/whl/cpu}"
cd "$ROOT/source"
if [ "$(id -u)" = 0 ] && [ "${FX_KATAS_SYSTEM_SETUP:-1}" != 0 ]; then
    if ! command -v bwrap >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq bubblewrap >/dev/null 2>&1 \\
            || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null 2>&1; } \\
            || echo "fx-katas autograder: bubblewrap could not be installed; grading goes on without it"
    fi
    if ! id -u fxkatas >/dev/null 2>&1; then
        useradd --system --no-create-home --shell /usr/sbin/nologin fxkatas >/dev/null 2>&1 \\
            || echo "fx-katas autograder: could not add the user fxkatas"
    fi
fi
python3 -m venv "$ROOT/venv"
if [ -n "$INDEX" ]; then
    "$ROOT/venv/bin/pip" install --quiet --extra-index-url "$INDEX" "torch==2.13.0"
fi
"$ROOT/venv/bin/pip" install --quiet -e .
"$ROOT/venv/bin/python" -c "import torch, checker; assert torch.__version__.split('+')[0] == '2.13.0', torch.__version__"
chmod -R go-rwx "$ROOT/source/solutions" "$ROOT"/source/katas/*/hidden
echo "fx-katas autograder: ready (torch $("$ROOT/venv/bin/python" -c 'import torch; print(torch.__version__)'))"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission. It always writes results/results.json, whatever the submission.
ROOT="${FX_KATAS_AUTOGRADER_ROOT:-/autograder}"
PYTHON="${FX_KATAS_AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}"
cd "$ROOT/source" && exec "$PYTHON" -m checker.mentor.gradescope run --root "$ROOT"
"""


class BundleError(Exception):
    """A bad option for the bundle (one line, exit 2)."""


@dataclass
class AutograderConfig:
    """What the bundle grades and shows; written into the bundle as CONFIG_NAME."""

    katas: list[int]
    time_limits: dict[str, float] = field(default_factory=dict)  # kata number -> seconds (default: the kata's)
    visibility: str = "visible"  # of every test, unless check_visibility names it
    check_visibility: dict[str, str] = field(default_factory=dict)  # "N/check_id" -> visibility
    counterexamples: bool = True  # show the shrunk random model of a failing fuzz check
    stdout_visibility: str = "hidden"  # run_autograder's own output, for instructors

    def validate(self, known: dict[int, Kata]) -> None:
        unknown = [n for n in self.katas if n not in known]
        if unknown or not self.katas:
            raise BundleError(f"no kata {unknown[0]}" if unknown else "name at least one kata")
        for where, value in [("--visibility", self.visibility), ("stdout", self.stdout_visibility),
                             *((f"--check-visibility {k}", v) for k, v in self.check_visibility.items())]:
            if value not in VISIBILITIES:
                raise BundleError(f"{where}: {value!r} is not one of {', '.join(VISIBILITIES)}")
        for number in self.time_limits:
            if int(number) not in self.katas:
                raise BundleError(f"--time-limit {number}=…: kata {number} is not in the bundle")

    @classmethod
    def load(cls, path: Path) -> "AutograderConfig":
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


# --- the bundle -------------------------------------------------------------------------------------------------

MUST_BE_COMMITTED = ("katas", "solutions")  # what learners start from and what grades them


@dataclass
class Packed:
    """What build_bundle put in the zip, for the mentor to read."""

    path: Path
    source: str                # "git HEAD <commit>" or "the working tree"
    files: list[str]           # every file packed from the repository, as paths in the zip
    uncommitted: list[str] = field(default_factory=list)  # changed or new files under BUNDLED, not committed
    from_head: bool = True
    checkout: bool = True      # the repository is a git checkout with a commit

    def stubs(self) -> list[tuple[str, bool]]:
        """(path, looks like a pristine stub) of every kata's stub in the bundle."""
        from checker.core.manifest import load_katas
        from checker.core.stubs import looks_pristine

        shipped = set(self.files)
        with zipfile.ZipFile(self.path) as bundle:
            return [(name, looks_pristine(bundle.read(name))) for name in
                    (f"katas/{k.slug}/{k.module}" for k in load_katas()) if name in shipped]

    def describe(self) -> str:
        """Per top folder, how many files (and how many of them hidden checks), then every stub shipped."""
        lines = [f"packed {len(self.files)} files from {self.source}, plus setup.sh, run_autograder and {CONFIG_NAME}:"]
        for folder in BUNDLED:
            inside = [f for f in self.files if f.startswith(folder + "/")]
            hidden = sum(1 for f in inside if "/hidden/" in f)
            lines.append(f"  {folder + '/':<11} {len(inside):>4} files"
                         + (f" ({hidden} of them in {folder}/*/hidden/)" if hidden else ""))
        single = [f for f in self.files if "/" not in f]
        if single:
            lines.append(f"  {', '.join(single)}")
        stubs = self.stubs()
        lines.append("the stubs learners start from:")
        for name, pristine in stubs:
            lines.append(f"  {name}" + ("" if pristine else "   <- NOT a pristine stub: its functions are implemented"))
        return "\n".join(lines)


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None


def git_state(repo: Path) -> tuple[str, str, list[str]] | str:
    """(commit, the repository's folder inside the checkout, uncommitted paths under BUNDLED), or why `repo` is
    not a git checkout with a commit. An uncommitted path is a changed, staged, deleted or new (untracked, not
    ignored) file, relative to `repo`."""
    head = _git(repo, "rev-parse", "--verify", "--quiet", "HEAD")
    prefix = _git(repo, "rev-parse", "--show-prefix")
    if head is None or prefix is None:
        return "git is not installed"
    if prefix.returncode != 0:
        return (prefix.stderr.decode(errors="replace").strip().splitlines() or ["not a git checkout"])[-1]
    if head.returncode != 0:
        return "the git checkout has no commit yet"
    where = prefix.stdout.decode().strip()
    status = _git(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--",
                  *BUNDLED, *BUNDLED_FILES)
    if status is None or status.returncode != 0:
        return "git status failed: " + (status.stderr.decode(errors="replace").strip() if status else "")
    entries, changed = status.stdout.decode(errors="replace").split("\0"), []
    skip = False
    for entry in entries:
        if skip or len(entry) < 4:
            skip = False
            continue
        code, path = entry[:2], entry[3:]
        skip = "R" in code or "C" in code  # a rename or copy: the next entry is its old name
        if path.startswith(where):
            changed.append(path[len(where):])
    return head.stdout.decode().strip(), where, sorted(set(changed))


def _named(paths: list[str], most: int = 12) -> str:
    shown = ", ".join(paths[:most])
    return shown + (f" and {len(paths) - most} more" if len(paths) > most else "")


def build_bundle(out: Path, config: AutograderConfig, *, repo: Path = REPO_ROOT, allow_dirty: bool = False) -> Packed:
    """Write autograder.zip: setup.sh and run_autograder at its root, the config, and the repository's checker,
    katas (hidden checks included) and references, as committed at HEAD (`git archive`), so that a mentor's own
    work in the stubs never ships as the learners' stubs.

    Refuses (BundleError) when katas/ or solutions/ have uncommitted changes, naming them, and outside a git
    checkout; with `allow_dirty` it packs the working tree as it is instead. Uncommitted changes elsewhere
    (checker/) are left out and listed in `Packed.uncommitted`."""
    out = Path(out)
    state = git_state(repo)
    if isinstance(state, str) and not allow_dirty:
        raise BundleError(f"{repo} is not a git checkout the bundle can be built from ({state}): the bundle is "
                          f"built from the committed files. Build it in a clone of the repository, or pass "
                          f"--allow-dirty to pack the files as they are (check first that every katas/*/<module> "
                          f"is the untouched stub)")
    uncommitted = [] if isinstance(state, str) else state[2]
    blocking = [p for p in uncommitted if p.split("/", 1)[0] in MUST_BE_COMMITTED]
    if blocking and not allow_dirty:
        raise BundleError(f"katas/ or solutions/ have uncommitted changes, and the bundle is built from the "
                          f"committed files: {_named(blocking)}. Commit them, put them aside (`git stash`), or "
                          f"pass --allow-dirty to pack the working tree as it is")
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bundle:
        _add(bundle, "setup.sh", SETUP_SH, executable=True)
        _add(bundle, "run_autograder", RUN_AUTOGRADER, executable=True)
        _add(bundle, CONFIG_NAME, json.dumps(asdict(config), indent=2) + "\n")
        if allow_dirty:
            files = _pack_working_tree(bundle, repo)
            source = "the working tree (--allow-dirty: uncommitted changes included)"
        else:
            commit, where, _ = state
            files = _pack_head(bundle, repo, where)
            source = f"git HEAD {commit[:10]} (committed files only)"
        _add_pristine_snapshots(bundle, files)
    return Packed(out, source, files, uncommitted, from_head=not allow_dirty, checkout=not isinstance(state, str))


def _add_pristine_snapshots(bundle: zipfile.ZipFile, files: list[str]) -> None:
    """Every stub's pristine version as checker.core.stubs keeps it outside a git checkout
    (.kata-backups/.pristine/<slug>/<module>): the bundle has no git history, and grading kata 5 puts the
    pristine stub of a kata 3 or 4 the learner did not hand in beside their kata 5 file."""
    from checker.core.manifest import load_katas
    from checker.core.stubs import PRISTINE_DIR, BackupError, looks_pristine, pristine_stub

    for kata in load_katas():
        name = f"katas/{kata.slug}/{kata.module}"
        if name not in files:
            continue
        try:
            data = pristine_stub(kata)[0]
        except (BackupError, OSError):
            data = bundle.read(name)
            if not looks_pristine(data):
                continue
        _add(bundle, f".kata-backups/{PRISTINE_DIR}/{kata.slug}/{kata.module}", data.decode("utf-8", errors="replace"))


def _wanted(relative: str) -> bool:
    parts = relative.split("/")
    return (relative in BUNDLED_FILES or (len(parts) > 1 and parts[0] in BUNDLED)) \
        and "__pycache__" not in parts and not parts[-1].startswith(".kata-")


def _pack_working_tree(bundle: zipfile.ZipFile, repo: Path) -> list[str]:
    files = []
    for name in BUNDLED_FILES:
        if (repo / name).is_file():
            bundle.write(repo / name, name)
            files.append(name)
    for folder in BUNDLED:
        for path in sorted((repo / folder).rglob("*")):
            relative = path.relative_to(repo).as_posix()
            if path.is_file() and _wanted(relative):
                bundle.write(path, relative)
                files.append(relative)
    return files


def _pack_head(bundle: zipfile.ZipFile, repo: Path, where: str) -> list[str]:
    """The committed files under BUNDLED, read with `git archive` of HEAD (the repository's own folder of it)."""
    import tarfile

    archived = _git(repo, "archive", "--format=tar", f"HEAD:{where}")
    if archived is None or archived.returncode != 0:
        problem = archived.stderr.decode(errors="replace").strip() if archived else "git did not run"
        raise BundleError(f"git archive HEAD failed: {problem}")
    files = []
    with tarfile.open(fileobj=io.BytesIO(archived.stdout)) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            name = member.name.removeprefix("./")
            if not member.isfile() or not _wanted(name):
                continue
            info = zipfile.ZipInfo(name, date_time=time.localtime(member.mtime)[:6])
            info.external_attr = ((0o755 if member.mode & 0o111 else 0o644) | stat.S_IFREG) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, tar.extractfile(member).read())
            files.append(name)
    return files


def _add(bundle: zipfile.ZipFile, name: str, text: str, *, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    bundle.writestr(info, text)


# --- finding the learner's files -----------------------------------------------------------------------------------

def locate_submission(submission: Path, katas: list[Kata], work: Path) -> tuple[Path | None, str]:
    """The folder holding the learner's kata files, and a note for the learner (what was found where).

    Accepted: a whole clone (katas/<slug>/<file>), kata folders (<slug>/<file>), only the kata files, any of
    them inside one extra folder, or a .zip of any of them. Zip files are unpacked into `work` (never over the
    submission), refusing absolute paths, `..` and more than MAX_UNPACKED_BYTES."""
    from checker.mentor.grade import _holds_katas

    if not submission.is_dir():
        return None, f"there is no submission folder ({submission})"
    roots = [submission]
    for index, archive in enumerate(sorted(submission.rglob("*.zip"))[:5]):
        target = work / f"zip-{index}"
        problem = _unzip(archive, target)
        if problem:
            return None, f"{archive.name}: {problem}"
        roots.append(target)
    for root in roots:
        found = _search(root, katas, _holds_katas)
        if found is not None:
            where = found.relative_to(root) if found != root else Path(".")
            return found, f"graded the kata files found in {'your zip' if root != submission else 'your submission'}" \
                          f"{'' if str(where) == '.' else f' under {where}/'}"
    files = sorted(str(p.relative_to(submission)) for p in submission.rglob("*") if p.is_file())[:12]
    wanted = ", ".join(f"{k.module} (or katas/{k.slug}/{k.module})" for k in katas)
    return None, (f"no kata file in your submission: expected {wanted}; found "
                  + (", ".join(files) if files else "no file at all"))


def _search(root: Path, katas: list[Kata], holds) -> Path | None:
    """The shallowest folder under `root` (at most SEARCH_DEPTH down) that holds kata files."""
    level = [root]
    for _ in range(SEARCH_DEPTH + 1):
        for folder in level:
            if holds(folder, katas):
                return folder
        level = [p for folder in level for p in sorted(folder.iterdir())
                 if p.is_dir() and not p.is_symlink() and not p.name.startswith((".", "__"))]
    return None


def _unzip(archive: Path, target: Path) -> str:
    try:
        with zipfile.ZipFile(archive) as opened:
            members = opened.infolist()
            if sum(m.file_size for m in members) > MAX_UNPACKED_BYTES:
                return f"unpacks to more than {MAX_UNPACKED_BYTES >> 20} MB"
            for member in members:
                name = Path(member.filename)
                if name.is_absolute() or ".." in name.parts:
                    return f"holds a path outside the archive ({member.filename})"
            opened.extractall(target)
    except (zipfile.BadZipFile, OSError) as exc:
        return f"not a zip file that can be read ({exc})"
    return ""


# --- results --------------------------------------------------------------------------------------------------

def shape_results(data: dict, config: AutograderConfig, kata_of: dict[str, tuple[int, str]], note: str,
                  seconds: float) -> dict:
    """Gradescope's results.json from `checker grade`'s: visibility per test, counterexamples kept or not, the
    run's time and a note on what was graded. `kata_of` maps a test's name to (kata number, check id)."""
    tests = []
    for test in data.get("tests", []):
        test = dict(test)
        number, check_id = kata_of.get(test["name"], (0, ""))
        test["visibility"] = config.check_visibility.get(f"{number}/{check_id}", config.visibility)
        if not config.counterexamples and COUNTEREXAMPLE_MARK in test.get("output", ""):
            head = test["output"].split(COUNTEREXAMPLE_MARK)[0].rstrip()
            test["output"] = f"{head}\n(a random model fails this check; this assignment does not show which)"
        test["name_format"] = test["output_format"] = "text"
        tests.append(test)
    output = (note + "\n\n" + data.get("output", "")).strip()
    return {"score": data.get("score", 0), "execution_time": round(seconds), "output": output, "output_format": "text",
            "visibility": config.visibility, "stdout_visibility": config.stdout_visibility, "tests": tests}


def failure_results(message: str, config: AutograderConfig | None, seconds: float) -> dict:
    """results.json for a submission that could not be graded at all: score 0 and why, never a crash."""
    return {"score": 0, "execution_time": round(seconds), "output": message, "output_format": "text",
            "visibility": config.visibility if config else "visible",
            "stdout_visibility": config.stdout_visibility if config else "hidden", "tests": []}


def run(root: Path) -> int:
    """Grade root/submission with the bundle's config; write root/results/results.json. Always exits 0."""
    started = time.monotonic()
    results = root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    config = None
    try:
        config = AutograderConfig.load(root / "source" / CONFIG_NAME)
        data = _grade(root, config, started)
    except Exception as exc:  # noqa: BLE001 - the learner gets a message, the instructor the traceback in stdout
        traceback.print_exc()
        data = failure_results(f"The autograder itself failed ({type(exc).__name__}: {exc}); your instructor "
                               "can see the details. Your submission was not graded.", config, time.monotonic() - started)
    results.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {results}: score {data['score']}")
    return 0


def _grade(root: Path, config: AutograderConfig, started: float) -> dict:
    from checker.core.manifest import get_kata
    from checker.kit import DEFAULT_SEED
    from checker.mentor.grade import grade

    katas = [get_kata(n) for n in config.katas]
    with tempfile.TemporaryDirectory(prefix="fx-katas-autograder-") as work:
        folder, note = locate_submission(root / "submission", katas, Path(work))
        if folder is None:
            return failure_results(f"Your submission could not be graded: {note}.", config, time.monotonic() - started)
        out = Path(work) / "grades"
        limits = {int(n): float(s) for n, s in config.time_limits.items()}
        summary = grade(folder, katas, out=out, gradescope=True, seed=DEFAULT_SEED, profile=None, quiet=True,
                        time_limits=limits, single=True)
        print(summary)
        data = json.loads((out / "results.json").read_text(encoding="utf-8"))
        learner_files = [p for p in out.glob("*.json") if p.name != "results.json"]  # <learner>.json: check ids
        learner = json.loads(learner_files[0].read_text(encoding="utf-8")) if learner_files else {}
    kata_of = {}
    for entry in learner.get("katas", []):
        kata = get_kata(entry["kata"])
        for check in entry.get("checks", []):
            kata_of[f"Kata {kata.number} · {check['stage']} · {check['name']}"] = (kata.number, check["id"])
    return shape_results(data, config, kata_of, note, time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m checker.mentor.gradescope")
    sub = parser.add_subparsers(dest="command", required=True)
    runner = sub.add_parser("run", help="grade /autograder/submission (what run_autograder calls)")
    runner.add_argument("--root", type=Path, default=Path("/autograder"))
    args = parser.parse_args(argv)
    os.environ.setdefault("FX_KATAS_WARM", "0")  # one submission per container: a warm server would not pay
    return run(args.root)


if __name__ == "__main__":
    sys.exit(main())
