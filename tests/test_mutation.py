"""Mutation testing: every kata's report (katas/NN_slug/hidden/mutation.toml) is current and triaged, its
hand-written mutants fail exactly their KILLED_BY, and the tool itself (cosmic-ray mutants, the forked oracle,
the report) works, on a tiny fixture kata without torch.

The report tests read files only. When one fails, it says which file changed: run `make mutate N=k`.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from checker.core.mutation_report import (UNTRIAGED, Report, Survivor, keep_reasons, load_report, relative, report_path)
from conftest import KATAS, TESTS_DIR, kata_id, killed_by

FIXTURE = TESTS_DIR / "fixtures" / "mutation_kata"
FIXTURE_SOLUTION = FIXTURE / "tally.py"


def _report(kata) -> Report:
    report = load_report(kata)
    if report is None:
        pytest.fail(f"kata {kata.number} has no mutation report {relative(report_path(kata))}: "
                    f"run `make mutate N={kata.number}` and commit it")
    return report


# --- every kata's report ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kata", KATAS, ids=kata_id)
def test_mutation_report_is_current(kata):
    report = _report(kata)
    problems = report.stale_files()
    for path in (kata.solution_path, kata.checks_path):
        if relative(path) not in report.files:
            problems.append(f"the report does not name {relative(path)}")
    assert not problems, (f"{relative(report_path(kata))} was computed on other files: {'; '.join(problems)}. "
                          f"Run `make mutate N={kata.number}` (it keeps the reasons already written).")


@pytest.mark.parametrize("kata", KATAS, ids=kata_id)
def test_mutation_report_uses_the_pinned_tool(kata):
    from checker.author.mutants import TOOL, TOOL_VERSION

    report = _report(kata)
    assert (report.tool, report.tool_version) == (TOOL, TOOL_VERSION), \
        f"{relative(report_path(kata))} was made with {report.tool} {report.tool_version}: run `make mutate N={kata.number}`"


@pytest.mark.parametrize("kata", KATAS, ids=kata_id)
def test_every_survivor_is_triaged(kata):
    report = _report(kata)
    untriaged = report.untriaged()
    listing = "\n".join(f"  {s.id} (line {s.line}, in {s.function}): {s.diff.splitlines()[-1] if s.diff else ''}"
                        for s in untriaged[:15])
    assert not untriaged, (
        f"{len(untriaged)} surviving mutants of kata {kata.number} have reason = {UNTRIAGED!r} in "
        f"{relative(report_path(kata))}:\n{listing}\nFor each: equivalent by the lesson's contract -> write a "
        f"one-line reason; not equivalent -> add the missing check and a mutant in tests/mutants/{kata.slug}/ that "
        f"only it kills, then `make mutate N={kata.number}`. `python -m checker mutate {kata.number} --mutant ID` "
        f"shows what each check makes of one.")


@pytest.mark.parametrize("kata", KATAS, ids=kata_id)
def test_hand_written_mutants_fail_exactly_their_killed_by(kata):
    report = _report(kata)
    stale = report.stale_hand_mutants(kata)
    assert not stale, (f"{relative(report_path(kata))} scored other hand-written mutants: {'; '.join(stale)}. "
                       f"Run `make mutate N={kata.number}`.")
    wrong = []
    for recorded in report.hand_mutants:
        declared, failing = set(killed_by(Path(recorded.file))), set(recorded.failing)
        if declared != failing:
            extra, missing = sorted(failing - declared), sorted(declared - failing)
            wrong.append(f"  {recorded.file}: KILLED_BY = {tuple(sorted(declared))}, but it fails {tuple(sorted(failing))}"
                         + (f"; add {extra}" if extra else "") + (f"; {missing} do not fail it" if missing else ""))
    assert not wrong, ("KILLED_BY must be exactly the checks a mutant fails (all checks, learner profile, as "
                       "recorded by `make mutate`):\n" + "\n".join(wrong))


@pytest.mark.parametrize("kata", KATAS, ids=kata_id)
def test_every_correct_alternative_passes_every_check(kata):
    """tests/test_katas.py scores one alternative per kata with the real checker; the others are read from here."""
    report = _report(kata)
    stale = report.stale_alternatives(kata)
    assert not stale, (f"{relative(report_path(kata))} scored other alternatives: {'; '.join(stale)}. "
                       f"Run `make mutate N={kata.number} ARGS=--hand-only` (or without it if a check changed).")
    failing = {a.file: a.failing for a in report.alternatives if a.failing}
    assert not failing, ("a correct alternative fails checks: each is a check too narrow for the lesson's contract "
                         f"(or the alternative is wrong): {failing}")


# --- the tool: mutants --------------------------------------------------------------------------------------

def test_mutants_are_what_cosmic_ray_makes():
    """checker.author.mutants walks one top-level statement at a time; the result must be cosmic-ray's own."""
    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code

    from checker.author.mutants import generate

    source = FIXTURE_SOLUTION.read_text(encoding="utf-8")
    mutants = generate(source)
    assert len(mutants) > 40
    for mutant in mutants[::5]:
        assert mutant.source == mutate_code(source, cosmic_ray.plugins.get_operator(mutant.operator)(), mutant.occurrence)


def test_mutant_ids_survive_edits_elsewhere_and_skip_annotations():
    from checker.author.mutants import generate

    source = FIXTURE_SOLUTION.read_text(encoding="utf-8")
    edited = source.replace("DIVISOR = 1\n", "import math\nDIVISOR = 1\nUNUSED = 1 + 2\n", 1)
    before = {m.id: m.line for m in generate(source) if m.function != "<module>"}
    after = {m.id: m.line for m in generate(edited) if m.function != "<module>"}
    assert before.keys() == after.keys()
    assert all(after[key] == line + 2 for key, line in before.items())
    assert not [m for m in generate(source) if "list[int]" in m.diff], "annotations are never evaluated: no mutants there"


def test_report_round_trip_keeps_reasons_and_flags_untriaged():
    report = Report(9, "09_fixture", "cosmic-ray", "8.7.0", "2026-12-03", 1, {"a.py": "0" * 64}, ["core/AddNot"],
                    {"mutants": 3, "score": 0.5}, {"a_check": {"kills": 2, "seconds": 0.5}},
                    [Survivor("AddNot@f:1", "AddNot", "f", 3, "- if x:\n+ if not x:  # '''quoted'''"),
                     Survivor("AddNot@g:2", "AddNot", "g", 7, "- a\n+ b")])
    again = Report.from_toml(report.to_toml())
    assert again == report
    again.survivors[0].reason = "x is always truthy here"
    fresh = Report.from_toml(report.to_toml())
    keep_reasons(fresh, again)
    assert [s.reason for s in fresh.survivors] == ["x is always truthy here", UNTRIAGED]
    assert [s.id for s in fresh.untriaged()] == ["AddNot@g:2"]


# --- the tool: the oracle ----------------------------------------------------------------------------------

def _fixture_verdicts(diffs: dict[str, str], time_limit: float = 5.0):
    from checker.author.mutants import generate
    from checker.author.oracle import Job, Oracle, Target

    mutants = {m.diff.splitlines()[-1]: m for m in generate(FIXTURE_SOLUTION.read_text(encoding="utf-8"))}
    chosen = {name: mutants[line] for name, line in diffs.items()}
    target = Target("fixture", FIXTURE / "checks.py", FIXTURE_SOLUTION)
    with Oracle(target, warm=False) as oracle:
        jobs = [Job(m.id, source=m.source) for m in chosen.values()]
        jobs.append(Job("reference", path=FIXTURE_SOLUTION, stop_at_first=False))
        verdicts = {v.key: v for v in oracle.run(jobs, workers=2, time_limit=time_limit)}
    return {name: verdicts[m.id] for name, m in chosen.items()} | {"reference": verdicts["reference"]}


def test_oracle_kills_broken_mutants_and_spares_an_equivalent_one():
    before = sorted(p.name for p in FIXTURE.rglob("*"))
    verdicts = _fixture_verdicts({
        "flipped": "+ if value < 0:",
        "equivalent": "+ if value >= 0:",  # adding zero changes no sum
        "forever": "+ n = n + 1  # `n + 1` never ends",
        "import": "+ DIVISOR = 0",
    }, time_limit=1.5)
    reference = verdicts["reference"]
    assert reference.outcome == "survived" and [c.status for c in reference.checks] == ["pass"] * 3
    assert "tests/fixtures/mutation_kata/checks.py" not in reference.files  # only katas/ and solutions/ count

    flipped = verdicts["flipped"]
    assert (flipped.outcome, flipped.check, flipped.status) == ("killed", "positive_sum_skips_negatives", "fail")
    assert "expected 4" in flipped.message
    assert verdicts["equivalent"].outcome == "survived"
    assert len(verdicts["equivalent"].checks) == 3, "a survivor has run every check"
    assert verdicts["forever"].outcome == "timeout"
    assert (verdicts["import"].outcome, verdicts["import"].status) == ("killed", "import_error")
    assert "tally.py:9" in verdicts["import"].message and "ZeroDivisionError" in verdicts["import"].message
    assert sorted(p.name for p in FIXTURE.rglob("*")) == before, "a mutant's child wrote into the repository"


def test_oracle_follows_the_order_it_is_given():
    from checker.author.mutants import generate
    from checker.author.oracle import Job, Oracle, Target

    mutant = next(m for m in generate(FIXTURE_SOLUTION.read_text(encoding="utf-8")) if m.diff.endswith("+ DIVISOR = 2"))
    with Oracle(Target("fixture", FIXTURE / "checks.py", FIXTURE_SOLUTION), warm=False) as oracle:
        order = ["scaled_by_ten", "countdown_counts_steps", "positive_sum_skips_negatives"]
        verdict = next(oracle.run([Job(mutant.id, source=mutant.source)], order=lambda job: order))
    assert verdict.outcome == "killed" and [c.id for c in verdict.checks] == ["scaled_by_ten"]


def test_make_mutate_is_wired():
    makefile = (TESTS_DIR.parent / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^mutate: \$\(TEST_STAMP\)", makefile, re.M), "make mutate needs the venv with cosmic-ray set up first"
    pyproject = (TESTS_DIR.parent / "pyproject.toml").read_text(encoding="utf-8")
    from checker.author.mutants import TOOL_VERSION

    assert f'"cosmic-ray=={TOOL_VERSION}"' in pyproject, "pin cosmic-ray exactly in the test extra"


def test_a_report_is_carried_across_renames_only(tmp_path, monkeypatch):
    """`checker mutate --carry-renames`: a file whose text differs from the one the verdicts were computed on only
    by the listed renames takes its new digest; one with any other change, or whose old text is not what the report
    recorded, does not."""
    import hashlib
    import subprocess

    from checker.author import renames

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "a@b.c")
    git("config", "user.name", "author")
    for name in ("moved.py", "edited.py"):
        (tmp_path / name).write_text("from checker.child import load_module\nfrom katas.common.npu_aot import pack\n")
    git("add", ".")
    git("commit", "-qm", "base")
    recorded = hashlib.sha256((tmp_path / "moved.py").read_bytes()).hexdigest()
    pairs = [("from checker.child import load_module", "from checker.kit import load_module"),
             ("katas.common.npu_aot", "katas.common.npu.aot")]
    moved = "from checker.kit import load_module\nfrom katas.common.npu.aot import pack\n"
    (tmp_path / "moved.py").write_text(moved)
    (tmp_path / "edited.py").write_text(moved + "x = 1\n")
    monkeypatch.setattr(renames, "REPO_ROOT", tmp_path)

    assert renames.carried_digest("moved.py", recorded, "HEAD", pairs) == hashlib.sha256(moved.encode()).hexdigest()
    assert renames.carried_digest("edited.py", recorded, "HEAD", pairs) is None  # changed besides the renames
    assert renames.carried_digest("moved.py", "0" * 64, "HEAD", pairs) is None  # not what the verdicts were on
    assert renames.carried_digest("moved.py", recorded, "HEAD", pairs[:1]) is None  # a rename not listed

    listing = tmp_path / "renames.txt"
    listing.write_text("# comment\n\nchecker.child -> checker.trusted.checks_process\n")
    assert renames.read_renames(listing) == [("checker.child", "checker.trusted.checks_process")]
    listing.write_text("checker.child => checker.trusted\n")
    with pytest.raises(renames.RenameError, match="renames.txt:1: expected `old -> new`"):
        renames.read_renames(listing)


def test_a_report_is_carried_across_additions_to_a_file_it_only_depends_on(tmp_path, monkeypatch):
    """`checker mutate --carry-additions`: another kata's file that only gained imports, undecorated functions and
    call-free constants under new names, none of which the kata's own files reach, takes its new digest; a changed
    statement, an addition that runs code on import or rebinds a name, a kata that reaches an added name, the kata's
    own file, or an old text not the recorded one does not."""
    import hashlib
    import subprocess

    from checker.author import additions, renames
    from checker.core.manifest import Kata

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    base = '"""A reference."""\nimport torch\n\n\ndef fuse(gm):\n    """Fuse."""\n    return 1\n'
    grown = ('"""A reference, now with a report."""\nimport operator\nimport torch\n\nSPELLINGS = {operator.mul, "mul"}'
             '\n\n\ndef fuse(gm):\n    """Fuse."""\n    return 1  # a comment\n\n\ndef report(gm):\n    return []\n')
    assert additions.added_names(base.encode(), grown.encode()) == {"operator", "SPELLINGS", "report"}
    for wrong in (grown.replace("return 1 ", "return 2 "),                        # an old statement changed
                  base.replace("import torch\n", ""),                            # an old statement removed
                  base + "\n\n@torch.no_grad()\ndef report(gm):\n    return []\n",  # a decorator runs on import
                  base + "\nTABLE = dict(a=1)\n",                                # a call runs on import
                  base + "\n\ndef report(gm, cache=dict()):\n    return []\n",  # so does a default
                  base + "\n\ndef fuse(gm):\n    return 2\n",                     # a new fuse replaces the old
                  base + "\ntorch.manual_seed(0)\n"):                            # a statement that runs code
        assert additions.added_names(base.encode(), wrong.encode()) is None, wrong

    assert additions.reaches("from katas.common import ref\nref.report(gm)\n", {"report"})
    assert additions.reaches("getattr(ref, 'report')\n", {"report"})
    assert additions.reaches("from solutions.k.ref import fuse, report\n", {"report"})
    assert not additions.reaches("# the report says why\nreport = build()\n", {"report"})  # its own name, prose

    git("init", "-q")
    git("config", "user.email", "a@b.c")
    git("config", "user.name", "author")
    for folder in ("solutions/03_dep", "katas/05_user/hidden"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "solutions/03_dep/ref.py").write_text(base)
    (tmp_path / "katas/05_user/hidden/checks.py").write_text("from solutions.dep import ref\nref.fuse(None)\n")
    git("add", ".")
    git("commit", "-qm", "base")
    recorded = hashlib.sha256(base.encode()).hexdigest()
    (tmp_path / "solutions/03_dep/ref.py").write_text(grown)
    monkeypatch.setattr(additions, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(renames, "REPO_ROOT", tmp_path)  # where the file is read at BASE
    monkeypatch.setattr(additions, "hand_mutants", lambda kata: [])
    monkeypatch.setattr(additions, "alternatives", lambda kata: [])
    monkeypatch.setattr(additions, "sha256", lambda path: hashlib.sha256(path.read_bytes()).hexdigest())
    user = Kata(number=5, slug="05_user", title="t", module="m.py", stages=("s",), time_limit=60)
    dep = Kata(number=3, slug="03_dep", title="t", module="ref.py", stages=("s",), time_limit=60)
    now = hashlib.sha256(grown.encode()).hexdigest()
    assert additions.carried_digest(user, "solutions/03_dep/ref.py", recorded, "HEAD") == now
    assert additions.carried_digest(user, "solutions/03_dep/ref.py", "0" * 64, "HEAD") is None
    assert additions.carried_digest(dep, "solutions/03_dep/ref.py", recorded, "HEAD") is None  # its own reference
    (tmp_path / "katas/05_user/hidden/checks.py").write_text("from solutions.dep import ref\nref.report(None)\n")
    assert additions.carried_digest(user, "solutions/03_dep/ref.py", recorded, "HEAD") is None  # it reaches one
