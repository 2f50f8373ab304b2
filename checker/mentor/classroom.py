"""GitHub Classroom: `python -m checker classroom-template` writes the autograding files a mentor copies into the
assignment's template repository, so that every push a learner makes is graded in GitHub Actions.

Classroom's graders award a test's points when its command exits 0, so each check is one test, run with
`python -m checker kata N --check ID` (exit 0 only when that check passes) and worth the check's weight: a
learner's points are then exactly the checker's score. The first command starts the learner's warm server
(checker/run/warm.py), so the many commands after it take a fraction of a second each.

Two files, for Classroom's two generations of autograding:
- `.github/workflows/classroom.yml`: one `classroom-resources/autograding-command-grader` step per check and the
  `autograding-grading-reporter` step that adds them up (what Classroom writes for new assignments);
- `.github/classroom/autograding.json`: the same tests for the older `education/autograding` action.

The hidden checks and references are in the learner's repository there: Classroom grades, it does not hide.
Gradescope (checker/mentor/gradescope.py) hides them.
"""
from __future__ import annotations

import json
from pathlib import Path

from checker.core.manifest import Kata

PYTHON = ".venv/bin/python"
TIMEOUT_MINUTES = 10


def tests_for(katas: list[Kata], plans: dict[str, list]) -> list[dict]:
    """One test per check: {"id", "name", "command", "points"}; `plans` from checker.run.batch.probe_plans."""
    tests = []
    for kata in katas:
        for check_id, stage, name, weight in plans[kata.slug]:
            tests.append({"id": f"kata-{kata.number}-{check_id}".replace("_", "-"),
                          "name": f"Kata {kata.number} · {stage} · {name}",
                          "command": f"{PYTHON} -m checker kata {kata.number} --check {check_id}",
                          "points": weight})
    return tests


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid double-quoted YAML scalar


def workflow(tests: list[dict]) -> str:
    lines = [
        "# Written by `python -m checker classroom-template`: copy into the assignment's template repository.",
        "name: Autograding Tests",
        "'on':",
        "- push",
        "- repository_dispatch",
        "permissions:",
        "  checks: write",
        "  actions: read",
        "  contents: read",
        "jobs:",
        "  run-autograding-tests:",
        "    runs-on: ubuntu-latest",
        "    if: github.actor != 'github-classroom[bot]'",
        "    steps:",
        "    - name: Checkout code",
        "      uses: actions/checkout@v4",
        "    - name: Set up Python, torch and the checker",
        "      run: make setup",
    ]
    for test in tests:
        lines += [
            f"    - name: {_quoted(test['name'])}",
            f"      id: {test['id']}",
            "      uses: classroom-resources/autograding-command-grader@v1",
            "      with:",
            f"        test-name: {_quoted(test['name'])}",
            f"        command: {_quoted(test['command'])}",
            f"        timeout: {TIMEOUT_MINUTES}",
            f"        max-score: {test['points']}",
        ]
    lines += ["    - name: Autograding Reporter", "      uses: classroom-resources/autograding-grading-reporter@v1",
              "      env:"]
    lines += [f"        {t['id'].upper().replace('-', '_')}_RESULTS: \"${{{{steps.{t['id']}.outputs.result}}}}\""
              for t in tests]
    lines += ["      with:", f"        runners: {','.join(t['id'] for t in tests)}"]
    return "\n".join(lines) + "\n"


def autograding_json(tests: list[dict]) -> str:
    return json.dumps({"tests": [{"name": t["name"], "setup": "make setup", "run": t["command"], "input": "",
                                  "output": "", "comparison": "included", "timeout": TIMEOUT_MINUTES,
                                  "points": t["points"]} for t in tests]}, indent=2, ensure_ascii=False) + "\n"


def write_template(out: Path, katas: list[Kata]) -> list[Path]:
    """Both files under `out` (a folder laid out like the repository's root); returns their paths."""
    from checker.run.batch import probe_plans

    plans = probe_plans(katas)
    broken = {slug: plan for slug, plan in plans.items() if not isinstance(plan, list)}
    if broken:
        slug, problem = next(iter(broken.items()))
        raise RuntimeError(f"{slug}: {problem}")
    tests = tests_for(katas, plans)
    paths = [out / ".github" / "workflows" / "classroom.yml", out / ".github" / "classroom" / "autograding.json"]
    for path, text in zip(paths, (workflow(tests), autograding_json(tests))):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return paths
