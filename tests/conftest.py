"""Self-tests for the repository: the checker, every kata's reference, stub and known-wrong attempts."""
from __future__ import annotations

import ast
import os
import warnings
from pathlib import Path

import pytest

from checker.core.manifest import load_katas
from live_verdicts import record_passing_katas, recording, runs_live

# Runs start cold unless a test asks for a warm server (the `warm_launcher` fixture, tests/test_warm.py): no
# test starts or reaches the learner's own per-user server.
os.environ["FX_KATAS_WARM"] = "0"

TESTS_DIR = Path(__file__).resolve().parent
MUTANTS_DIR = TESTS_DIR / "mutants"
ALTERNATIVES_DIR = TESTS_DIR / "alternatives"
ATTEMPTS_DIR = TESTS_DIR / "attempts"
KATAS = load_katas()
# The katas this run scores through the checker; the others' verdicts come from tests/verdicts.json
# (tests/live_verdicts.py says why, tests/test_verdicts.py checks the record is current).
LIVE_KATAS = [kata for kata in KATAS if runs_live(kata.slug)]


def kata_id(kata) -> str:
    return kata.slug


def mutant_files(kata) -> list[Path]:
    return sorted((MUTANTS_DIR / kata.slug).glob("*.py"))


def killed_by(mutant: Path) -> tuple[str, ...]:
    """The check ids a mutant names in its KILLED_BY constant (read without importing it)."""
    tree = ast.parse(mutant.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "KILLED_BY" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise AssertionError(f"{mutant}: a mutant must declare KILLED_BY = (check ids, ...)")


def all_mutants():
    return [pytest.param(kata, path, id=f"{kata.slug}/{path.stem}") for kata in KATAS for path in mutant_files(kata)]


def first_of_each(files_of, katas) -> list:
    """The first of `files_of(kata)` for each kata that has one, as a test parameter."""
    return [pytest.param(kata, files[0], id=f"{kata.slug}/{files[0].stem}")
            for kata in katas if (files := files_of(kata))]


def boundary_mutants():
    """The hand-written mutants scored with the real checker (worker process and all): the first of each live kata,
    or every one with FX_KATAS_EVERY_MUTANT=1. Every one of them is also scored on every check by
    `make mutate`, and tests/test_mutation.py proves from its report that each fails exactly its KILLED_BY."""
    if os.environ.get("FX_KATAS_EVERY_MUTANT") == "1":
        return [param for param in all_mutants() if param.values[0] in LIVE_KATAS]
    return first_of_each(mutant_files, LIVE_KATAS)


def alternative_files(kata) -> list[Path]:
    """Correct attempts written differently from the reference: each must score full marks."""
    return sorted((ALTERNATIVES_DIR / kata.slug).glob("*.py"))


def all_alternatives():
    return [pytest.param(kata, path, id=f"{kata.slug}/{path.stem}")
            for kata in KATAS for path in alternative_files(kata)]


def live_alternatives():
    """The correct alternatives scored with the real checker: the first of each live kata, or every one with
    FX_KATAS_EVERY_ALTERNATIVE=1. `make mutate` scores every one on every check, and tests/test_mutation.py proves
    from its report that each passes them all."""
    if os.environ.get("FX_KATAS_EVERY_ALTERNATIVE") == "1":
        return [param for param in all_alternatives() if param.values[0] in LIVE_KATAS]
    return first_of_each(alternative_files, LIVE_KATAS)


LIVE_TESTS = "tests/test_katas.py::"


def live_test_ids(kata) -> set[str]:
    """The ids of the tests that score `kata` through the checker in tests/test_katas.py by default (the reference,
    the pristine stub, the first mutant, the first alternative): the unit tests/verdicts.json records."""
    ids = {f"{LIVE_TESTS}test_reference_scores_full_marks[{kata.slug}]",
           f"{LIVE_TESTS}test_pristine_stub_is_not_started[{kata.slug}]"}
    ids |= {f"{LIVE_TESTS}test_mutant_fails_the_check_aimed_at_it[{p.id}]" for p in first_of_each(mutant_files, [kata])}
    ids |= {f"{LIVE_TESTS}test_correct_alternative_scores_full_marks[{p.id}]"
            for p in first_of_each(alternative_files, [kata])}
    return ids


@pytest.fixture
def fresh_dynamo():
    """Dynamo's caches emptied before and after the test, torch's warnings kept out of it: for the tests that
    measure what torch does (tests/test_*_facts.py mark themselves with it)."""
    import torch._dynamo

    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
    torch._dynamo.reset()


@pytest.fixture(scope="session")
def warm_launcher():
    """A private warm server for this test process (checker/run/warm.py): runs given its launcher are forked by it."""
    from checker.run.warm import PrivateServer

    os.environ["FX_KATAS_WARM"] = "1"
    try:
        server = PrivateServer().start()
    finally:
        os.environ["FX_KATAS_WARM"] = "0"
    assert server.launcher() is not None, f"the private warm server did not start: {server.problem}"
    yield server.launcher()
    server.close()


def comparable(result) -> dict:
    """A result as JSON, without what differs between any two runs of the same attempt: how long it took, and
    the memory addresses a message may show (`UsersHandler@0x7f…`)."""
    import json
    import re

    data = result.to_json()
    data.pop("duration_s")
    return json.loads(re.sub(r"0x[0-9a-f]{8,}", "0x…", json.dumps(data)))


def score_both_ways(kata, attempt, launcher, **options):
    """Score `attempt` cold and forked by the warm server: the results must be the same, but for time."""
    from checker.run.runner import run_kata

    cold = run_kata(kata, attempt, **options)
    warm = run_kata(kata, attempt, launcher=launcher, **options)
    assert (cold.start, warm.start) == ("cold", "warm")
    assert comparable(warm) == comparable(cold), "a warm start changed the verdicts"
    return warm


# Tests that take 10-40 s: started first, so that `-n auto` does not end with one core running a long test alone.
SLOW_FIRST = ("test_no_route_forges_a_grade", "test_grade_survives_hanging", "test_grade_reports_hints",
              "test_grade_feedback_never_quotes", "test_reference_scores_full_marks", "test_the_first_run_starts_cold",
              "test_a_private_server_ends", "test_an_attempt_that_waits_is_stopped", "test_the_classroom_template",
              "test_a_server_started_by_attempt_code", "test_each_result_reaches_the_live_report",
              "test_every_model_builds_and_runs", "test_where_pt2e_lives_now_katas_common",
              "test_correct_alternative_scores_full_marks", "test_infinite_loop_times_out")


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: not item.name.startswith(SLOW_FIRST))


_passed: set[str] = set()
_failed: set[str] = set()
_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    """Every phase of every test, as the controller sees it (xdist forwards the workers' reports)."""
    if report.failed or report.skipped:
        _failed.add(report.nodeid)
    elif report.when == "call":
        _passed.add(report.nodeid)
        _seconds[report.nodeid] = report.duration


def pytest_sessionfinish(session):
    """Under `make verdicts`: record each kata whose live tests all passed (tests/live_verdicts.py)."""
    if not recording() or hasattr(session.config, "workerinput"):
        return
    expected = {kata.slug: live_test_ids(kata) for kata in KATAS}
    done = record_passing_katas(expected, _passed - _failed, _seconds)
    if done:
        print(f"\ntests/verdicts.json: recorded {', '.join(done)}")
