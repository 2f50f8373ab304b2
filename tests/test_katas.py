"""Every reference scores full marks, every pristine stub is not_started, every mutant is caught.

The stub and the mutant of each kata are scored twice, cold and forked by a warm server, and the two results must
be the same (checker/run/warm.py). A correct attempt runs every check once each way: the reference cold, the
alternative forked by the warm server (a kata without an alternative scores its reference both ways).

Kata-agnostic: adding a kata to katas/katas.toml (and mutants to tests/mutants/<slug>/) adds its tests here.
`make test` runs them for the smoke kata only and trusts tests/verdicts.json for the others; `make verdicts` runs
them all and records them (tests/live_verdicts.py).
"""
from __future__ import annotations

import pytest

from checker.run.runner import run_kata
from conftest import (KATAS, LIVE_KATAS, alternative_files, boundary_mutants, kata_id, killed_by, live_alternatives,
                      mutant_files, score_both_ways)


@pytest.mark.parametrize("kata", LIVE_KATAS, ids=kata_id)
def test_reference_scores_full_marks(kata, warm_launcher):
    """In the learner profile, the one learners and graders run. (`make mutate` scores the reference in the deep
    profile too before it scores any mutant, and tests/test_mutation.py holds its report current.)"""
    if alternative_files(kata):  # the alternative runs every check warm; cold here keeps both starts covered
        result = run_kata(kata, kata.solution_path)
        assert result.start == "cold"
    else:
        result = score_both_ways(kata, kata.solution_path, warm_launcher)
    failing = {c.id: f"{c.status}: {c.message[:300]}" for c in result.checks if c.status != "pass"}
    assert result.status == "pass", (result.message, failing)
    assert result.score == result.max_score > 0
    assert set(kata.stages) == {c.stage for c in result.checks}, "every stage in katas.toml has at least one check"


@pytest.mark.parametrize("kata", LIVE_KATAS, ids=kata_id)
def test_pristine_stub_is_not_started(kata, warm_launcher):
    result = score_both_ways(kata, kata.stub_path, warm_launcher)
    assert result.status == "not_started", [(c.id, c.status, c.message[:200]) for c in result.checks]
    assert result.score == 0


@pytest.mark.parametrize("kata", KATAS, ids=kata_id)
def test_every_kata_ships_known_wrong_attempts(kata):
    assert len(mutant_files(kata)) >= 3, f"tests/mutants/{kata.slug}/ needs the mistakes learners really make"


@pytest.mark.parametrize("kata, mutant", boundary_mutants())
def test_mutant_fails_the_check_aimed_at_it(kata, mutant, warm_launcher):
    """Through the real checker. (`make mutate` scores every hand-written mutant on every check, and
    tests/test_mutation.py holds each to exactly its KILLED_BY; FX_KATAS_EVERY_MUTANT=1 runs them all here too.)"""
    aimed = killed_by(mutant)
    result = score_both_ways(kata, mutant, warm_launcher, only=aimed)
    verdicts = {c.id: c for c in result.checks}
    assert set(aimed) <= set(verdicts), f"KILLED_BY names unknown checks: {set(aimed) - set(verdicts)}"
    for check_id in aimed:
        check = verdicts[check_id]
        assert check.status in ("fail", "error"), f"{check_id} did not catch the mistake: {check.status}"
        assert check.message.strip(), f"{check_id} failed without telling the learner why"
        if check.fuzz:  # a random-example check owes the learner the shrunk example and the seed that replays it
            assert "Smallest failing example found" in check.message and "--seed" in check.message, \
                f"{check_id} failed without its counterexample: {check.message[:300]}"
    assert result.status == "fail"


@pytest.mark.parametrize("kata, alternative", live_alternatives())
def test_correct_alternative_scores_full_marks(kata, alternative, warm_launcher):
    """A correct approach the lesson allows, other than the reference's, passes every check: the checks test
    the contract, not the reference's way of meeting it. (The first of each kata here; `make mutate` scores every
    one, and tests/test_mutation.py holds each to passing every check; FX_KATAS_EVERY_ALTERNATIVE=1 runs them all.)"""
    result = run_kata(kata, alternative, launcher=warm_launcher)
    assert result.start == "warm"
    failing = {c.id: f"{c.status}: {c.message[:300]}" for c in result.checks if c.status != "pass"}
    assert result.status == "pass", (result.message, failing)
