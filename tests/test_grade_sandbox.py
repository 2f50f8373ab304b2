"""`checker grade` where a grade counts: attempts that try to forge their own score, change a neighbour's, or
read the hidden checks and the reference get what their own code earns, and nobody around them is affected.

Each route of issue 32 is an attack in tests/attacks/grade_*.py, graded among honest learners in a private copy
of the repository, the way a mentor (or the Gradescope autograder, which calls `checker grade`) runs it.
CI runs as root, where `make test` installs bubblewrap: the sandbox is the real one there.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from checker.attempt import sandbox as sandboxes
from checker.attempt.sandbox import Sandbox, bubblewrap_works, plan
from checker.core.manifest import REPO_ROOT

ATTACKS_DIR = Path(__file__).resolve().parent / "attacks"
needs_bubblewrap = pytest.mark.skipif(not bubblewrap_works(),
                                      reason="bubblewrap is not installed or cannot make namespaces here "
                                             "(make test installs it where it runs as root with apt-get)")


def _fingerprint(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for top in ("checker", "katas", "solutions") for p in sorted((root / top).rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """The checker, katas and references as a mentor's checkout: what an attack may try to write."""
    for name in ("checker", "katas", "solutions"):
        shutil.copytree(REPO_ROOT / name, tmp_path / "repo" / name, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "repo"


def _learners(folder: Path, files: dict[str, Path | str]) -> Path:
    """One folder per learner holding kata 1's file: a path to copy, or the text itself."""
    for name, source in files.items():
        (folder / name / "01_dialects").mkdir(parents=True)
        target = folder / name / "01_dialects" / "dialects.py"
        target.write_text(source if isinstance(source, str) else source.read_text())
    return folder


def _grade(repo: Path, learners: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(repo), "NO_COLOR": "1", "KATA_ATTACK_REPO": str(repo),
           "KATA_ATTACK_LEARNERS": str(learners),
           "KATA_ATTACK_MARKER": str(out.parent / "marker")}
    return subprocess.run([sys.executable, "-m", "checker", "grade", str(learners), "--kata", "1", "--jobs", "2",
                           "--quiet", "--gradescope", "--out", str(out), *extra], capture_output=True, text=True,
                          cwd=repo, env=env, timeout=900)


@needs_bubblewrap
def test_no_route_forges_a_grade_changes_a_neighbours_or_leaks_in_the_sandbox(repo_copy: Path, tmp_path: Path):
    """The grade routes of issue 32 (append to the checker, import the reference, rewrite the snapshot and a
    neighbour's copy, write over the stub, the reference, the progress file and the next learner's file) in one
    class with an honest learner graded after them: every attempt runs from a working copy made before any attempt
    ran, in a sandbox that lets it write nothing else, with checks and references loaded from a snapshot."""
    attackers = {f"aa_{p.stem}": p for p in sorted(ATTACKS_DIR.glob("grade_*.py"))
                 if p.stem in ("grade_appends_to_the_checker", "grade_imports_the_reference",
                               "grade_rewrites_the_snapshot", "grade_writes_everywhere")}
    assert len(attackers) == 4
    honest_source = REPO_ROOT / "solutions" / "01_dialects" / "dialects.py"
    learners = _learners(tmp_path / "class", {**attackers, "zz_honest": honest_source})
    before = _fingerprint(repo_copy)
    proc = _grade(repo_copy, learners, tmp_path / "grades")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "isolated: every attempt ran in a bubblewrap sandbox" in proc.stdout, proc.stdout[-1000:]
    results = {name: json.loads((tmp_path / "grades" / f"{name}.json").read_text())["katas"][0]
               for name in [*attackers, "zz_honest"]}
    honest = results["zz_honest"]
    assert (honest["status"], honest["score"]) == ("pass", honest["max_score"]), honest
    for name in attackers:
        assert results[name]["status"] != "pass" and results[name]["score"] < honest["max_score"], name
    assert results["aa_grade_writes_everywhere"]["status"] == "not_started", results["aa_grade_writes_everywhere"]
    assert _fingerprint(repo_copy) == before, "an attempt changed the checker, the katas or the references"
    assert (learners / "zz_honest" / "01_dialects" / "dialects.py").read_bytes() == honest_source.read_bytes(), \
        "an attempt wrote into the next learner's file"
    assert not (repo_copy / ".kata-progress.json").exists(), "an attempt wrote the mentor's progress file"
    assert not (tmp_path / "marker").exists(), (tmp_path / "marker").read_text()
    with open(tmp_path / "grades" / "gradebook.csv", encoding="utf-8") as handle:
        assert "bubblewrap sandbox" in handle.read()
    for name in attackers:
        text = (tmp_path / "grades" / "gradescope" / name / "results.json").read_text()
        assert "def node_dialect" not in text and "CHECKS.check" not in text


def test_without_a_sandbox_an_appended_checker_stops_the_grade_and_no_result_is_written(repo_copy: Path,
                                                                                       tmp_path: Path):
    """Where attempts are not isolated, the appending attack does change `checker/`; grading notices before it
    writes anything and says why."""
    learners = _learners(tmp_path / "class", {"mallory": ATTACKS_DIR / "grade_appends_to_the_checker.py"})
    proc = _grade(repo_copy, learners, tmp_path / "grades", "--sandbox", "none")
    assert proc.returncode == 2, proc.stdout[-1500:] + proc.stderr[-1500:]
    assert "changed while attempts ran" in proc.stderr and "checker/" in proc.stderr, proc.stderr[-1500:]
    assert (tmp_path / "marker").exists(), "the attack did not write, so this test proves nothing"
    assert not (tmp_path / "grades" / "mallory.json").exists()


def test_the_plan_says_plainly_when_attempts_are_not_isolated():
    none = plan([], want="none")
    assert not none.isolated
    assert none.describe().startswith("NOT isolated") and "bubblewrap" in none.describe()
    if bubblewrap_works():
        assert plan([]).mode == "namespace"
    elif os.geteuid() != 0:
        assert plan([]).mode == "none"


def test_a_user_sandbox_names_what_other_users_can_still_read(tmp_path: Path):
    """Mode "user" (root without namespaces) hides by file modes; a hidden path others can read is named."""
    open_folder, closed_folder = tmp_path / "open", tmp_path / "closed"
    for folder, mode in ((open_folder, 0o755), (closed_folder, 0o700)):
        folder.mkdir()
        (folder / "checks.py").write_text("secret")
        folder.chmod(mode)
    tmp_path.chmod(0o755)
    for parent in tmp_path.parents:  # pytest's folders are private: this test asks about the last step only
        if not os.stat(parent).st_mode & 0o001:
            pytest.skip(f"{parent} is closed to other users, so nothing below it is readable by them")
    sandbox = Sandbox("user", (str(open_folder), str(closed_folder)), uid=61000,
                      exposed=tuple(p for p in (str(open_folder), str(closed_folder))
                                    if sandboxes.readable_by_others(Path(p))))
    assert sandbox.exposed == (str(open_folder),)
    assert "NOT hidden from attempts" in sandbox.describe() and str(open_folder) in sandbox.describe()


@needs_bubblewrap
def test_the_namespace_command_hides_each_path_and_leaves_one_writable_folder(tmp_path: Path):
    secret, own, elsewhere = tmp_path / "secret", tmp_path / "own", tmp_path / "elsewhere"
    exchange = tmp_path / "exchange"
    for folder in (secret, own, elsewhere, exchange):
        folder.mkdir()
    (secret / "checks.py").write_text("secret")
    (exchange / "for-the-attempt").mkdir(mode=0o777)  # what kata 8's check makes for a saved program
    (exchange / "for-the-attempt").chmod(0o777)
    uid = 61000 if os.geteuid() == 0 else None
    if uid is not None:
        os.chown(own, uid, 0)
    sandbox = Sandbox("namespace", (str(secret),), str(own), uid, exchange=str(exchange))
    script = (f"import os, pathlib\n"
              f"print(os.listdir({str(secret)!r}))\n"
              f"pathlib.Path({str(own / 'note')!r}).write_text('mine')\n"
              f"pathlib.Path({str(exchange / 'for-the-attempt' / 'program.pt2')!r}).write_text('saved')\n"
              f"for target in ({str(elsewhere / 'x')!r}, {str(REPO_ROOT / 'checker' / 'x.py')!r}):\n"
              f"    try:\n        pathlib.Path(target).write_text('x'); print('WROTE', target)\n"
              f"    except OSError as exc:\n        print('refused', exc.errno)\n"
              f"print('uid', os.getuid())\n")
    proc = subprocess.run(sandbox.worker_command([sys.executable, "-c", script], own), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[0] == "[]", proc.stdout
    assert "WROTE" not in proc.stdout and proc.stdout.count("refused") == 2, proc.stdout
    assert (own / "note").read_text() == "mine"
    assert (exchange / "for-the-attempt" / "program.pt2").read_text() == "saved"
    if uid is not None:
        assert f"uid {uid}" in proc.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to an unprivileged user needs root")
def test_a_forked_worker_in_a_user_sandbox_is_the_learners_user_for_good():
    """Mode "user": the forked worker becomes the learner's uid (real, effective and saved), so it can read
    neither root's private files nor another learner's copy, and cannot become root again."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="fx-katas-user-") as folder:  # as grade's: under /tmp, passable
        _user_sandbox_round(Path(folder))


def _user_sandbox_round(tmp_path: Path) -> None:
    from checker.attempt.sandbox import hand_over

    secret = tmp_path / "checks.py"
    secret.write_text("secret")
    secret.chmod(0o600)
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    for folder, uid in ((mine, 61001), (theirs, 61002)):
        folder.mkdir()
        (folder / "attempt.py").write_text("x = 1")
        hand_over(folder, uid)
    tmp_path.chmod(0o711)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child reports what it could do, then leaves without pytest's teardown
        os.close(read)
        Sandbox("user", own=str(mine), uid=61001).become_attempt_user()
        said = [str(os.getresuid())]
        for path in (secret, theirs / "attempt.py", mine / "attempt.py"):
            try:
                path.read_text()
                said.append(f"read {path.name}")
            except OSError:
                said.append(f"refused {path.name}")
        try:
            os.setuid(0)
            said.append("root again")
        except OSError:
            said.append("stays")
        os.write(write, "|".join(said).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        said = pipe.read().split("|")
    assert said == ["(61001, 61001, 61001)", "refused checks.py", "refused attempt.py", "read attempt.py", "stays"]


@needs_bubblewrap
def test_a_process_the_checks_start_for_the_attempt_runs_in_its_sandbox(tmp_path: Path, monkeypatch):
    """checker.attempt.sandbox.confine: kata 8 loads the attempt's saved program (torch.export.load unpickles it) in a
    fresh process; while grading, that process is as confined as the worker; outside a grade, unchanged."""
    from checker.attempt.sandbox import ENV_VAR, confine

    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "checks.py").write_text("secret")
    command = [sys.executable, "-c", f"import os; print(os.listdir({str(secret)!r}))"]
    assert confine(command, tmp_path) == command
    monkeypatch.setenv(ENV_VAR, Sandbox("namespace", (str(secret),), uid=61000 if os.geteuid() == 0 else None).to_env())
    proc = subprocess.run(confine(command, tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr[-1000:]
