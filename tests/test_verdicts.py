"""The recorded live verdicts stand in for the katas `make test` does not score through the checker: each must be
current (tests/live_verdicts.py), and the recording must be able to say no."""
from __future__ import annotations

import pytest

import live_verdicts
from conftest import KATAS, kata_id, live_test_ids


@pytest.mark.parametrize("kata", [k for k in KATAS if k.slug not in live_verdicts.SMOKE_KATAS], ids=kata_id)
def test_each_katas_live_verdicts_are_recorded_and_current(kata):
    entry = live_verdicts.load_record()["katas"].get(kata.slug)
    rerun = f"run `make verdicts N={kata.number}` (about 1-3 minutes) and commit tests/verdicts.json"
    assert entry is not None, f"{kata.slug} has no recorded live verdicts: {rerun}"
    assert entry["fingerprint"] == live_verdicts.fingerprint(kata.slug), (
        f"{kata.slug}'s recorded verdicts were made on other files (its checks, attempts, the checker or "
        f"katas/common changed since): {rerun}")
    # Recorded with every live test (the reference, the stub, a mutant, an alternative) for this kata.
    missing = live_test_ids(kata) - set(entry["passed"])
    assert not missing, f"{kata.slug}: not recorded as passing: {sorted(missing)}; {rerun}"


def test_a_kata_with_a_failing_test_keeps_its_old_record(tmp_path, monkeypatch):
    monkeypatch.setattr(live_verdicts, "RECORD", tmp_path / "verdicts.json")
    slug = KATAS[0].slug
    expected = {slug: {"a", "b"}}
    assert live_verdicts.record_passing_katas(expected, {"a"}, {}) == []
    assert slug not in live_verdicts.load_record()["katas"]
    assert live_verdicts.record_passing_katas(expected, {"a", "b", "c"}, {"a": 1.0, "b": 2.0}) == [slug]
    entry = live_verdicts.load_record()["katas"][slug]
    assert entry["passed"] == ["a", "b"] and entry["cpu_seconds"] == 3.0
    assert entry["fingerprint"] == live_verdicts.fingerprint(slug)


def test_the_fingerprint_follows_the_katas_own_files_and_the_checker(tmp_path, monkeypatch):
    """A file under the kata, its mutants or the checker changes the fingerprint; a note (*.md) does not."""
    root = tmp_path
    (root / "katas").mkdir()
    (root / "katas/katas.toml").write_text('[[kata]]\nslug = "01_x"\nstages = ["a"]\n\n[[kata]]\nslug = "02_y"\n')
    for relative in ("checker/run/runner.py", "katas/common/x.py", "tests/test_katas.py",
                     "tests/conftest.py", "tests/live_verdicts.py", "katas/01_x/hidden/checks.py",
                     "katas/01_x/hidden/blind_rounds.md", "solutions/01_x/x.py", "tests/mutants/01_x/m.py"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("1")
    monkeypatch.setattr(live_verdicts, "ROOT", root)
    before = live_verdicts.fingerprint("01_x")
    (root / "katas/01_x/hidden/blind_rounds.md").write_text("a note")
    assert live_verdicts.fingerprint("01_x") == before
    for relative in ("tests/mutants/01_x/m.py", "checker/run/runner.py", "katas/01_x/hidden/checks.py"):
        (root / relative).write_text("2")
        assert live_verdicts.fingerprint("01_x") != before, relative
        before = live_verdicts.fingerprint("01_x")
    (root / "katas/02_y").mkdir()
    (root / "katas/02_y/other.py").write_text("another kata")
    (root / "katas/katas.toml").write_text('[[kata]]\nslug = "01_x"\nstages = ["a"]\n\n[[kata]]\nslug = "02_y"\n'
                                           'stages = ["new"]\n')
    assert live_verdicts.fingerprint("01_x") == before, "another kata's files and manifest entry change nothing"
    (root / "katas/katas.toml").write_text('[[kata]]\nslug = "01_x"\nstages = ["a", "b"]\n')
    assert live_verdicts.fingerprint("01_x") != before, "the kata's own manifest entry counts"
