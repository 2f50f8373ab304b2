"""Grading a class on Gradescope and GitHub Classroom. The Gradescope autograder (checker/mentor/gradescope.py),
run as Gradescope runs it: the bundle unzipped into a temporary root laid out like /autograder (source/,
submission/, results/), `run_autograder` once per submission, and every results.json validated against checker/mentor/schemas/gradescope-results.schema.json.

The toy kata of tests/test_tooling.py keeps each run to a second or two. `setup.sh` installs torch into a new
virtual environment, which takes longer than `make test` may: `make gradescope-check` runs it with kata 2 end to
end and records what it saw in tests/gradescope/e2e.json, which the last test here holds to the current files.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from checker.core.manifest import REPO_ROOT
from checker.mentor.gradescope import SCHEMA_PATH
from conftest import ATTEMPTS_DIR
from test_tooling import TOY, TOY_SLUG, TOY_SOLUTION, TOY_STUB, _write, repo  # noqa: F401 - `repo` is a fixture

E2E_RECORD = REPO_ROOT / "tests" / "gradescope" / "e2e.json"
E2E_INPUTS = ("checker/mentor/gradescope.py", "checker/mentor/schemas/gradescope-results.schema.json", "pyproject.toml")


def validate(data: dict) -> None:
    jsonschema.validate(data, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


@pytest.fixture
def autograder(repo, tmp_path):  # noqa: F811 - the fixture imported above
    """An /autograder-like root holding the toy repository's bundle; call it with a submission builder."""
    bundle = tmp_path / "autograder.zip"
    repo.git_commit()  # the bundle is built from the committed files
    proc = repo.run("gradescope-bundle", "--kata", str(TOY), "--time-limit", f"{TOY}=8",
                    "--check-visibility", f"{TOY}/graph_of_none=after_due_date", "--out", str(bundle))
    assert proc.returncode == 0, proc.stderr
    names = zipfile.ZipFile(bundle).namelist()
    assert {"setup.sh", "run_autograder", "fx-katas-autograder.json", f"katas/{TOY_SLUG}/hidden/checks.py",
            f"solutions/{TOY_SLUG}/toy.py"} <= set(names)

    def grade(fill) -> dict:
        root = tmp_path / f"autograder-{len(list(tmp_path.glob('autograder-*')))}"
        with zipfile.ZipFile(bundle) as opened:
            opened.extractall(root / "source")
        (root / "submission").mkdir()
        fill(root / "submission")
        env = {**os.environ, "FX_KATAS_AUTOGRADER_ROOT": str(root), "FX_KATAS_AUTOGRADER_PYTHON": sys.executable}
        env.pop("PYTHONPATH", None)
        proc = subprocess.run(["bash", str(root / "source" / "run_autograder")], capture_output=True, text=True,
                              env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        data = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
        validate(data)
        return data

    return grade


def _zip_of_a_clone(folder: Path) -> None:
    """What a learner uploads after zipping their clone: one extra folder on top, the kata inside katas/."""
    with zipfile.ZipFile(folder / "fx-katas.zip", "w") as archive:
        archive.writestr(f"fx-katas-main/katas/{TOY_SLUG}/toy.py", TOY_SOLUTION)
        archive.writestr("fx-katas-main/README.md", "my clone")


def test_a_reference_in_a_zipped_clone_scores_full_marks_with_the_visibility_asked_for(autograder):
    data = autograder(_zip_of_a_clone)
    assert data["score"] == 5 and all(t["status"] == "passed" for t in data["tests"])
    assert "under fx-katas-main/" in data["output"]
    visibility = {t["name"].rsplit(" · ", 1)[-1]: t["visibility"] for t in data["tests"]}
    assert visibility == {"node_dialect(None) is 'neutral'": "visible", "detect_dialect(None) is 'torch'": "after_due_date"}


@pytest.mark.parametrize("case, expected", [
    ("stub_file_only", "nothing implemented yet"),
    ("wrong_in_kata_folder", "returned 'torch', expected 'neutral'"),
    ("syntax_error", "SyntaxError"),
    ("infinite_loop", "did not finish within 8 s"),
    ("no_kata_file", "no kata file in your submission"),
    ("broken_zip", "not a zip file that can be read"),
])
def test_every_kind_of_submission_gets_a_readable_result_and_zero(autograder, case, expected):
    def fill(folder: Path) -> None:
        if case == "stub_file_only":
            _write(folder / "toy.py", TOY_STUB)
        elif case == "wrong_in_kata_folder":
            _write(folder / TOY_SLUG / "toy.py", TOY_SOLUTION.replace('"neutral"', '"torch"'))
        elif case in ("syntax_error", "infinite_loop"):
            _write(folder / "toy.py", (ATTEMPTS_DIR / f"{case}.py").read_text(encoding="utf-8"))
        elif case == "no_kata_file":
            _write(folder / "notes.txt", "I did not finish")
        else:
            _write(folder / "work.zip", "this is not a zip")

    data = autograder(fill)
    assert data["score"] < 5
    text = data["output"] + "\n".join(t.get("output", "") for t in data["tests"])
    assert expected in text, text[-1500:]
    assert "Traceback" not in text


GRADESCOPE_ATTACK = """import importlib.util, os, pathlib
from checker.core.manifest import REPO_ROOT, SOLUTIONS_DIR
for module in ("grade.py", "diffing.py", "__init__.py"):  # route 1: change what grading imports afterwards
    try:
        with open(REPO_ROOT / "checker" / module, "a") as handle:
            handle.write("\\nraise SystemExit('appended by an attempt')\\n")
    except OSError:
        pass
try:  # route 2: the reference, re-exported
    spec = importlib.util.spec_from_file_location("stolen", SOLUTIONS_DIR / "TOY_SLUG" / "toy.py")
    stolen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stolen)
    node_dialect, detect_dialect = stolen.node_dialect, stolen.detect_dialect
except OSError:
    secret = ""
    for path in (REPO_ROOT / "katas" / "TOY_SLUG" / "hidden" / "checks.py", SOLUTIONS_DIR / "TOY_SLUG" / "toy.py"):
        try:
            secret += path.read_text()
        except OSError as exc:
            secret += f"(could not read {path.name}: {exc.strerror})"
    def node_dialect(node):  # route 4: the checks' text as the error message
        raise RuntimeError(secret)
    def detect_dialect(gm):
        raise RuntimeError(secret)
""".replace("TOY_SLUG", TOY_SLUG)


def test_an_attempt_on_gradescope_gets_what_its_own_code_earns_and_sees_nothing_hidden(autograder, tmp_path):
    """The grade routes of issue 32 as one submission, run as Gradescope runs the bundle (as root here, where
    `make test` installs bubblewrap): it cannot change the checker, import the reference or read the checks."""
    from checker.attempt.sandbox import bubblewrap_works

    if not bubblewrap_works():
        pytest.skip("bubblewrap is not installed or cannot make namespaces here")
    data = autograder(lambda folder: _write(folder / "toy.py", GRADESCOPE_ATTACK))
    text = data["output"] + "\n".join(t.get("output", "") for t in data["tests"])
    assert data["score"] == 0, text[-1500:]
    assert "could not read checks.py" in text, "the attack did not run, so this test proves nothing"
    for secret in ("expect(got == \"neutral\"", "return \"neutral\"", "CHECKS = Checks()"):
        assert secret not in text
    source = sorted(tmp_path.glob("autograder-*"))[-1] / "source"
    assert not [p for p in (source / "checker").glob("*.py") if "appended by an attempt" in p.read_text()]


def test_hidden_counterexamples_are_cut_from_the_output():
    from checker.mentor.gradescope import AutograderConfig, shape_results

    message = "a random MLP changes: max abs diff 0.3\nSmallest failing example found: Linear(3, 4) ...\n--seed 7"
    data = {"score": 0, "output": "", "tests": [{"name": "t", "score": 0, "max_score": 2, "status": "failed",
                                                  "output": message}]}
    shown = shape_results(data, AutograderConfig(katas=[3]), {}, "", 1.0)
    hidden = shape_results(data, AutograderConfig(katas=[3], counterexamples=False), {}, "", 1.0)
    assert "Linear(3, 4)" in shown["tests"][0]["output"]
    assert "Linear(3, 4)" not in hidden["tests"][0]["output"] and "max abs diff" in hidden["tests"][0]["output"]
    validate(shown)
    validate(hidden)


def test_the_bundle_holds_the_committed_files_and_refuses_uncommitted_katas(repo, tmp_path):  # noqa: F811
    """A mentor's own work never ships: the bundle is `git archive` of HEAD, it refuses while katas/ or
    solutions/ have uncommitted changes (naming them) unless --allow-dirty, and it lists what it packed."""
    outside = repo.run("gradescope-bundle", "--kata", str(TOY), "--out", "x.zip")
    assert outside.returncode == 2 and "not a git checkout" in outside.stderr and "--allow-dirty" in outside.stderr
    repo.git_commit()
    (repo.root / "checker" / "kit" / "checks.py").write_text((repo.root / "checker" / "kit" / "checks.py").read_text() + "# MENTOR-LOCAL\n")
    built = repo.run("gradescope-bundle", "--kata", str(TOY), "--out", str(tmp_path / "head.zip"))
    assert built.returncode == 0, built.stderr
    with zipfile.ZipFile(tmp_path / "head.zip") as bundle:
        assert "MENTOR-LOCAL" not in bundle.read("checker/kit/checks.py").decode(), "an uncommitted change shipped"
        assert bundle.read(f"katas/{TOY_SLUG}/toy.py").decode() == TOY_STUB
        assert bundle.read(f".kata-backups/.pristine/{TOY_SLUG}/toy.py").decode() == TOY_STUB
        setup = bundle.read("setup.sh").decode()
    assert "checker/kit/checks.py" in built.stderr and "not in the bundle" in built.stderr
    assert "from git HEAD" in built.stdout and f"katas/{TOY_SLUG}/toy.py" in built.stdout
    assert " ".join(built.stdout.split()).count("solutions/ 2 files") == 1 and "of them in katas/*/hidden/" in built.stdout
    assert "apt-get install -y -qq bubblewrap" in setup and "useradd --system" in setup and " fxkatas" in setup
    assert 'chmod -R go-rwx "$ROOT/source/solutions" "$ROOT"/source/katas/*/hidden' in setup

    repo.toy_stub.write_text(TOY_SOLUTION)  # the mentor solved the kata in their own checkout
    refused = repo.run("gradescope-bundle", "--kata", str(TOY), "--out", str(tmp_path / "refused.zip"))
    assert refused.returncode == 2 and f"katas/{TOY_SLUG}/toy.py" in refused.stderr, refused.stderr
    assert not (tmp_path / "refused.zip").exists()
    dirty = repo.run("gradescope-bundle", "--kata", str(TOY), "--allow-dirty", "--out", str(tmp_path / "dirty.zip"))
    assert dirty.returncode == 0 and "WARNING: --allow-dirty" in dirty.stderr and "WORKING TREE" in dirty.stderr
    assert "NOT a pristine stub" in dirty.stdout
    with zipfile.ZipFile(tmp_path / "dirty.zip") as bundle:
        assert bundle.read(f"katas/{TOY_SLUG}/toy.py").decode() == TOY_SOLUTION
        assert bundle.read(f".kata-backups/.pristine/{TOY_SLUG}/toy.py").decode() == TOY_STUB


def test_learner_facing_output_is_capped_and_quotes_no_hidden_line():
    """results.json and the learner's JSON: at most 1,000 characters per output, with a note of what was cut,
    no line of a reference or a hidden folder, and no source line of a traceback frame outside the learner's file."""
    from checker.core.manifest import get_kata
    from checker.mentor.grade import OUTPUT_MAX_CHARS, gradescope_json, learner_facing, secret_lines
    from checker.run.runner import CheckResult, KataResult

    kata = get_kata(1)
    secret = secret_lines()
    quoted = [line.strip() for line in kata.solution_path.read_text().splitlines() if line.strip() in secret][:5]
    quoted += [line.strip() for line in kata.checks_path.read_text().splitlines() if line.strip() in secret][:5]
    assert len(quoted) == 10
    stub_line = next(line.strip() for line in kata.stub_path.read_text().splitlines() if line.startswith("def "))
    assert stub_line not in secret, "the stub's lines are public"
    message = "\n".join(["your function raised:", *quoted, 'Traceback (most recent call last):',
                         '  File "/x/checker/kit/checks.py", line 3, in run', "    private_helper(ctx, reference)",
                         '  File "/tmp/copy/01_dialects/dialects.py", line 9, in node_dialect',
                         "    return node.op.upper_case_of_mine()", "ValueError: nope"])
    shown = learner_facing(message + f"\nyour code raised RuntimeError at dialects.py:3 in f(): {quoted[0]} (and more)")
    assert not any(line in shown for line in quoted) and "private_helper" not in shown
    assert "your code raised RuntimeError at dialects.py:3 in f(): [hidden] (and more)" in shown
    assert 'File "/x/checker/kit/checks.py", line 3' in shown and "return node.op.upper_case_of_mine()" in shown
    assert "[12 lines hidden: they quote the checks, the reference or code outside your file]" in shown
    long = learner_facing("word " * 600)
    assert len(long) <= OUTPUT_MAX_CHARS and long.endswith("more characters)") and "… (cut: " in long
    checks = [CheckResult("a", "nodes", "a check", "fail", 1, message="x" * 3000),
              CheckResult("b", "nodes", "b check", "error", 1, message=message)]
    result = KataResult(1, kata.title, "fail", 0, 2, checks, "dialects.py", "2.13.0", 1.0)
    data = gradescope_json([result], [kata], {kata.slug: 2})
    assert all(len(t["output"]) <= OUTPUT_MAX_CHARS for t in data["tests"])
    assert "(cut: " in data["tests"][0]["output"] and not any(line in data["tests"][1]["output"] for line in quoted)
    validate({**data, "tests": [{**t, "visibility": "visible"} for t in data["tests"]]})


def test_bad_bundle_options_are_one_line(repo):  # noqa: F811
    for args, complaint in ((["--kata", "99"], "no kata 99"), (["--visibility", "sometimes"], "invalid choice"),
                            (["--time-limit", "x"], "N=SECONDS"),
                            (["--kata", str(TOY), "--check-visibility", f"{TOY}/no_such=hidden"], "no check 'no_such'")):
        proc = repo.run("gradescope-bundle", *args, "--out", "x.zip")
        assert proc.returncode == 2 and complaint in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def _inputs_digest() -> str:
    digest = hashlib.sha256()
    for name in E2E_INPUTS:
        digest.update((REPO_ROOT / name).read_bytes())
    return digest.hexdigest()


def test_the_recorded_end_to_end_run_with_setup_sh_is_current():
    """`make gradescope-check` ran setup.sh in a new virtual environment and graded real submissions of kata 2
    after the last change to the autograder's files."""
    assert E2E_RECORD.is_file(), "run `make gradescope-check` and commit tests/gradescope/e2e.json"
    record = json.loads(E2E_RECORD.read_text(encoding="utf-8"))
    assert record["inputs"] == _inputs_digest(), "the autograder changed since `make gradescope-check` last ran: run it"
    assert record["setup"] == "ok" and record["torch"].startswith("2.13.0")
    assert record["statuses"] == {"reference": "full marks", "stub": "0", "mutant": "partial", "syntax_error": "0",
                                  "infinite_loop": "0", "missing": "0"}


def test_the_classroom_template_scores_what_the_checker_scores(repo):  # noqa: F811
    """Every command of the template, run as Classroom runs it (points when it exits 0), adds up to the
    checker's own score, for an attempt that passes one check and fails the other."""
    import re

    proc = repo.run("classroom-template", "--kata", str(TOY), "--out", "template")
    assert proc.returncode == 0, proc.stderr
    tests = json.loads((repo.root / "template" / ".github" / "classroom" / "autograding.json").read_text())["tests"]
    workflow = (repo.root / "template" / ".github" / "workflows" / "classroom.yml").read_text()
    steps = re.findall(r'command: "(.*)"\n\s+timeout: \d+\n\s+max-score: (\d+)', workflow)
    assert [(t["run"], str(t["points"])) for t in tests] == steps, "the two files grade the same tests"
    assert "autograding-grading-reporter" in workflow and len(steps) == 2
    repo.toy_stub.write_text(TOY_SOLUTION.replace('"torch"', '"aten"'))  # detect_dialect wrong, node_dialect right
    points = 0
    for test in tests:
        command = test["run"].replace(".venv/bin/python", sys.executable).split()
        points += test["points"] * (subprocess.run(command, cwd=repo.root, env=repo.env(), capture_output=True).returncode == 0)
    checker = json.loads(repo.run("kata", str(TOY), "--json").stdout)
    assert points == checker["score"] == 2 and checker["max_score"] == sum(t["points"] for t in tests) == 5
