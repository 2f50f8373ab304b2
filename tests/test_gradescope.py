"""Grading a class on Gradescope and GitHub Classroom. The Gradescope autograder (checker/gradescope.py), run as Gradescope runs it: the bundle unzipped into a
temporary root laid out like /autograder (source/, submission/, results/), `run_autograder` once per
submission, and every results.json validated against checker/schemas/gradescope-results.schema.json.

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

from checker.gradescope import SCHEMA_PATH
from checker.manifest import REPO_ROOT
from conftest import ATTEMPTS_DIR
from test_tooling import TOY, TOY_SLUG, TOY_SOLUTION, TOY_STUB, _write, repo  # noqa: F401 - `repo` is a fixture

E2E_RECORD = REPO_ROOT / "tests" / "gradescope" / "e2e.json"
E2E_INPUTS = ("checker/gradescope.py", "checker/schemas/gradescope-results.schema.json", "pyproject.toml")


def validate(data: dict) -> None:
    jsonschema.validate(data, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


@pytest.fixture
def autograder(repo, tmp_path):  # noqa: F811 - the fixture imported above
    """An /autograder-like root holding the toy repository's bundle; call it with a submission builder."""
    bundle = tmp_path / "autograder.zip"
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


def test_hidden_counterexamples_are_cut_from_the_output():
    from checker.gradescope import AutograderConfig, shape_results

    message = "a random MLP changes: max abs diff 0.3\nSmallest failing example found: Linear(3, 4) ...\n--seed 7"
    data = {"score": 0, "output": "", "tests": [{"name": "t", "score": 0, "max_score": 2, "status": "failed",
                                                  "output": message}]}
    shown = shape_results(data, AutograderConfig(katas=[3]), {}, "", 1.0)
    hidden = shape_results(data, AutograderConfig(katas=[3], counterexamples=False), {}, "", 1.0)
    assert "Linear(3, 4)" in shown["tests"][0]["output"]
    assert "Linear(3, 4)" not in hidden["tests"][0]["output"] and "max abs diff" in hidden["tests"][0]["output"]
    validate(shown)
    validate(hidden)


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
