"""Hostile attempts (tests/attacks/) cannot forge a result: none gets `pass`, each gets the status a person
would expect, within the time limit, with no process left behind.

Each attack is the learner's file, at the learner's path, in a private copy of the repository (some write to
its files, found from their own path as a learner's code would), and its EXPECT names the outcome: status,
score, and words the message must hold. It runs twice: through the command line from a cold start, and forked
by a warm server (the learner's default, checker/run/warm.py) with the checks and references read from the copy.
"""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from checker.core.manifest import REPO_ROOT, get_kata
from checker.run.runner import WALL_FACTOR, run_kata, snapshot_hidden

ATTACKS_DIR = Path(__file__).resolve().parent / "attacks"
# grade_* attacks run inside `checker grade` (here and in tests/test_grade_sandbox.py), warm_* against the learner's
# warm server (tests/test_warm.py); the rest as the learner's own file, cold and warm
ATTACKS = sorted(p for p in ATTACKS_DIR.glob("*.py") if not p.stem.startswith(("grade_", "warm_")))
TIME_LIMIT = 60


def declared(path: Path) -> dict:
    """KATA, CHECKS, EXPECT (and ENV, extra environment for the checker) of an attack, read without importing it."""
    found = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
                    values = ast.literal_eval(node.value)
                    found.update({e.id: v for e, v in zip(target.elts, values)})
                elif isinstance(target, ast.Name) and target.id in ("KATA", "CHECKS", "EXPECT", "ENV"):
                    found[target.id] = ast.literal_eval(node.value)
    return found


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """A copy of the repository's code, katas and references: an attack may write to any of it."""
    for name in ("checker", "katas", "solutions"):
        shutil.copytree(REPO_ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def put_in_place(root: Path, attack: Path) -> Path:
    """The attack as the learner's own file of its kata under `root` (where the stub was)."""
    kata = get_kata(declared(attack)["KATA"])
    attempt = root / "katas" / kata.slug / kata.module
    shutil.copy2(attack, attempt)
    return attempt


def time_limit(spec: dict) -> float:
    """The limit an attack runs under: TIME_LIMIT, or a short one of its own for an attack meant to time out."""
    return float(spec["EXPECT"].get("time_limit", TIME_LIMIT))


def run_attack_cold(sandbox: Path, attack: Path, marker: Path) -> tuple[dict, float]:
    """`python -m checker kata N --json` in the sandbox, as a learner would run it, with warm starts off."""
    spec = declared(attack)
    put_in_place(sandbox, attack)
    env = {**os.environ, "PYTHONPATH": str(sandbox), "NO_COLOR": "1", "FX_KATAS_WARM": "0",
           "KATA_ATTACK_MARKER": str(marker), **spec.get("ENV", {})}
    env.pop("FX_KATAS_PROFILE", None)
    cmd = [sys.executable, "-m", "checker", "kata", str(spec["KATA"]), "--json", "--verbose",
           "--time-limit", str(time_limit(spec)), *(f"--check={c}" for c in spec["CHECKS"])]
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=sandbox, env=env, timeout=TIME_LIMIT + 60)
    took = time.monotonic() - started
    assert proc.stdout.strip(), f"no JSON from the checker: {proc.stderr[-2000:]}"
    return json.loads(proc.stdout), took


def run_attack_warm(root: Path, attack: Path, marker: Path, launcher, monkeypatch) -> tuple[dict, float]:
    """The same attack forked by the test process's private warm server, checks and references read from a copy
    under `root` (the attack's writes land there)."""
    spec = declared(attack)
    attempt = put_in_place(snapshot_hidden(root), attack)
    for name, value in {"KATA_ATTACK_MARKER": str(marker), **spec.get("ENV", {})}.items():
        monkeypatch.setenv(name, value)
    started = time.monotonic()
    result = run_kata(get_kata(spec["KATA"]), attempt, only=tuple(spec["CHECKS"]), time_limit=time_limit(spec),
                      hidden_root=root, launcher=launcher)
    assert result.start == "warm", result.message
    return result.to_json(verbose=True), time.monotonic() - started


def assert_expected(attack: Path, result: dict, took: float, marker: Path, root: Path) -> None:
    """`result` is what EXPECT names; `root` is the copy the attack ran in."""
    expect = declared(attack)["EXPECT"]
    messages = " ".join([result.get("message", "")] + [c["message"] for c in result["checks"]])
    assert result["status"] != "pass"
    assert result["status"] == expect["status"], (result["status"], messages[:800])
    assert result["score"] == expect["score"], [(c["id"], c["status"]) for c in result["checks"]]
    if "check_status" in expect:
        assert {c["status"] for c in result["checks"]} == {expect["check_status"]}, result["checks"]
    if "message" in expect:
        assert expect["message"] in messages, messages[:800]
    if "max_output" in expect:
        printed = sum(len(c.get("output", "")) for c in result["checks"]) + len(result.get("output", ""))
        assert printed < expect["max_output"], printed
    # an attack with a short limit of its own is meant to run into the wall-clock backstop: three times that limit
    assert took < (WALL_FACTOR * time_limit(declared(attack)) if "time_limit" in expect else TIME_LIMIT) + 30
    if expect.get("forks"):
        assert marker.exists(), "the grandchild never started, so this test proves nothing"
    if marker.exists():  # the grandchild started: it must not have outlived the run
        pid = int(marker.read_text() or 0)
        time.sleep(0.2)
        assert pid and not Path(f"/proc/{pid}").exists(), f"process {pid} outlived the run"
    if "rewrites" in expect:  # the attack's write landed in the copy the checks read, yet changed nothing
        assert (root / expect["rewrites"]).read_text() != (REPO_ROOT / expect["rewrites"]).read_text(), \
            "the attack did not write, so this test proves nothing"


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda p: p.stem)
def test_attack_gets_the_expected_status(attack: Path, sandbox: Path, tmp_path: Path):
    marker = tmp_path / "grandchild.pid"
    result, took = run_attack_cold(sandbox, attack, marker)
    assert_expected(attack, result, took, marker, sandbox)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda p: p.stem)
def test_attack_forked_by_a_warm_server_gets_the_same_status(attack: Path, tmp_path: Path, warm_launcher,
                                                              monkeypatch):
    marker = tmp_path / "grandchild.pid"
    result, took = run_attack_warm(tmp_path / "copy", attack, marker, warm_launcher, monkeypatch)
    assert_expected(attack, result, took, marker, tmp_path / "copy")


def test_grade_feedback_never_quotes_the_checks_or_the_reference(sandbox: Path, tmp_path: Path):
    """An attempt that reads kata 1's hidden checks and reference and raises them as its error message
    (grade_quotes_the_checks.py): the mentor's review may show it, but no line of either file reaches the
    learner-facing results.json or the learner's JSON. The sandbox is off, so the attempt can read the files
    and the test proves the filter (checker.mentor.grade.learner_facing), not the sandbox."""
    from checker.mentor.grade import QUOTE_MIN_CHARS

    learners = tmp_path / "learners"
    (learners / "mallory" / "01_dialects").mkdir(parents=True)
    shutil.copy2(ATTACKS_DIR / "grade_quotes_the_checks.py", learners / "mallory" / "01_dialects" / "dialects.py")
    env = {**os.environ, "PYTHONPATH": str(sandbox), "NO_COLOR": "1"}
    out = tmp_path / "grades"
    proc = subprocess.run([sys.executable, "-m", "checker", "grade", str(learners), "--kata", "1", "--jobs", "1",
                           "--quiet", "--gradescope", "--sandbox", "none", "--out", str(out)],
                          capture_output=True, text=True, cwd=sandbox, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    secret = set()
    for path in (sandbox / "katas" / "01_dialects" / "hidden" / "checks.py",
                 sandbox / "solutions" / "01_dialects" / "dialects.py"):
        secret |= {line.strip() for line in path.read_text().splitlines() if len(line.strip()) >= QUOTE_MIN_CHARS}
    public = set()  # what learners read anyway: the stub, the lesson, the hints, katas/common
    for path in [*(sandbox / "katas" / "01_dialects").glob("*.*"), *(sandbox / "katas" / "common").rglob("*.py")]:
        public |= {line.strip() for line in path.read_text(errors="replace").splitlines()}
    secret -= public
    review = (out / "reviews" / "mallory.md").read_text()  # for the mentor: each message's first line, in full
    first = (sandbox / "katas" / "01_dialects" / "hidden" / "checks.py").read_text().splitlines()[0].strip()
    assert first in secret and first[:60] in review, "the attack read nothing, so this test proves nothing"
    for name in ("gradescope/mallory/results.json", "mallory.json"):
        data = json.loads((out / name).read_text())
        texts = [data.get("output", "")] + [t.get("output", "") for t in data.get("tests", [])]
        for kata in data.get("katas", []):
            texts += [kata.get("message", ""), *(c["message"] for c in kata["checks"])]
        everything = "\n".join(texts)
        leaked = [line for line in secret if line in everything]  # quoted whole, even inside a longer line
        assert not leaked, (name, leaked[:5])
        assert "lines hidden: they quote the checks" in "\n".join(texts), name
        assert all(len(t["output"]) <= 1000 for t in data.get("tests", [])), name
