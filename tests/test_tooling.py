"""The learner and mentor commands: hint, reset/restore, watch, all (progress), diff and grade.

Every test works in a throwaway copy of the repository (checker/, kata 1, its reference, plus a tiny toy kata
whose checks take a moment), so the real katas/*.py stubs, progress file and backups are never touched. The toy
kata has kata 1's API (node_dialect, detect_dialect), so tests/attempts/*.py fixtures work as its attempts.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from checker.core.manifest import REPO_ROOT, get_kata
from checker.core.stubs import looks_pristine
from checker.learner.diffing import run_sample, side_by_side
from checker.learner.hints import parse_hints
from conftest import ATTEMPTS_DIR

KATA1 = get_kata(1)
TOY = 9
TOY_SLUG = "09_toy"
TOY_STUB = '''"""Toy kata: the only file you edit."""


def node_dialect(node):
    """'neutral' for None."""
    raise NotImplementedError("node_dialect: README.md, 'Nodes'")


def detect_dialect(gm):
    """'torch' for None."""
    raise NotImplementedError("detect_dialect: README.md, 'Graphs'")
'''
TOY_SOLUTION = '''def node_dialect(node):
    return "neutral"


def detect_dialect(gm):
    return "torch"
'''
TOY_CHECKS = '''from checker.kit import Checks, expect

CHECKS = Checks()


@CHECKS.check(stage="basics", weight=2)
def node_of_none(ctx):
    "node_dialect(None) is 'neutral'"
    got = ctx.attempt.node_dialect(None)
    expect(got == "neutral", f"node_dialect(None) returned {got!r}, expected 'neutral'")


@CHECKS.check(stage="basics", weight=3)
def graph_of_none(ctx):
    "detect_dialect(None) is 'torch'"
    got = ctx.attempt.detect_dialect(None)
    expect(got == "torch", f"detect_dialect(None) returned {got!r}, expected 'torch'")
'''
TOY_HINTS = """# Hints for the toy kata

## Hint 1
Return a constant.

## Hint 2 — which constant
```python
## this line is code, not a new tier
```
'neutral' for nodes.

## Hint 3
`return "torch"` in detect_dialect.
"""


class Repo:
    """A copy of the repository to run `python -m checker` in."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def toy_stub(self) -> Path:
        return self.root / "katas" / TOY_SLUG / "toy.py"

    @property
    def kata1_stub(self) -> Path:
        return self.root / "katas" / KATA1.slug / KATA1.module

    @property
    def progress(self) -> Path:
        return self.root / ".kata-progress.json"

    @property
    def backups(self) -> Path:
        return self.root / ".kata-backups"

    def env(self, **extra: str) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FX_KATAS_") or k == "FX_KATAS_WARM"}
        env.update(PYTHONPATH=str(self.root), NO_COLOR="1", COLUMNS="150", **extra)
        return env

    def run(self, *args: str, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "checker", *args], capture_output=True, text=True,
                              cwd=self.root, env=self.env(**extra), timeout=timeout)
        assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
        return proc

    def popen(self, *args: str, out: Path) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "checker", *args], cwd=self.root, env=self.env(),
                                stdout=open(out, "w"), stderr=subprocess.STDOUT)

    def git_commit(self) -> None:
        git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-C", str(self.root)]
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "pristine"]):
            subprocess.run(git + args, check=True, capture_output=True)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def repo(tmp_path) -> Repo:
    root = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO_ROOT / "checker", root / "checker", ignore=ignore)
    shutil.copytree(REPO_ROOT / "katas" / "common", root / "katas" / "common", ignore=ignore)
    shutil.copy(REPO_ROOT / "katas" / "__init__.py", root / "katas" / "__init__.py")
    shutil.copytree(KATA1.folder, root / "katas" / KATA1.slug, ignore=ignore)
    shutil.copytree(KATA1.solution_path.parent, root / "solutions" / KATA1.slug, ignore=ignore)
    _write(root / "katas" / TOY_SLUG / "toy.py", TOY_STUB)
    _write(root / "katas" / TOY_SLUG / "hints.md", TOY_HINTS)
    _write(root / "katas" / TOY_SLUG / "hidden" / "checks.py", TOY_CHECKS)
    _write(root / "solutions" / TOY_SLUG / "toy.py", TOY_SOLUTION)
    stages = ", ".join(f'"{s}"' for s in KATA1.stages)
    _write(root / "katas" / "katas.toml", f'''schema = 1

[[kata]]
number = 1
slug = "{KATA1.slug}"
title = "{KATA1.title}"
module = "{KATA1.module}"
stages = [{stages}]
time_limit = {KATA1.time_limit}

[[kata]]
number = {TOY}
slug = "{TOY_SLUG}"
title = "Toy kata"
module = "toy.py"
stages = ["basics"]
time_limit = 60
''')
    return Repo(root)


# --- hints ---------------------------------------------------------------------------------------------------

def test_hints_are_parsed_by_heading_outside_code_fences():
    hints = parse_hints(TOY_HINTS)
    assert [h.number for h in hints] == [1, 2, 3]
    assert "this line is code" in hints[1].body and hints[1].heading == "Hint 2 — which constant"


def test_hint_reveals_tiers_in_order_and_remembers_them(repo):
    first = repo.run("hint", str(TOY))
    assert first.returncode == 0 and "hint 1 of 3" in first.stdout and "Return a constant." in first.stdout
    assert "Hint 2" not in first.stdout and "make hint N=9" in first.stdout
    second = repo.run("hint", str(TOY))
    assert "hint 2 of 3 — which constant" in second.stdout and "'neutral' for nodes." in second.stdout
    last = repo.run("hint", str(TOY))
    assert "hint 3 of 3" in last.stdout and "last hint" in last.stdout
    done = repo.run("hint", str(TOY))
    assert done.returncode == 0 and "All 3 hints" in done.stdout and f"hint {TOY} --all" in done.stdout
    again = repo.run("hint", str(TOY), "--all")
    assert all(text in again.stdout for text in ("Return a constant.", "'neutral' for nodes.", 'return "torch"'))
    assert repo.run("hint", str(TOY), "--tier", "2").stdout.count("hint 2 of 3") == 1
    record = json.loads(repo.progress.read_text())["katas"][TOY_SLUG]
    assert record["hints_used"] == 3
    scored = repo.run("kata", str(TOY), "--json")
    assert json.loads(scored.stdout)["hints_used"] == 3


def test_hint_tier_not_yet_shown_is_refused(repo):
    proc = repo.run("hint", str(TOY), "--tier", "2")
    assert proc.returncode == 2 and "not shown yet" in proc.stderr and len(proc.stderr.splitlines()) == 1


# --- the progress file ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("garbage", ['{"version": 1, "katas": ', "[1, 2]", '{"version": 99, "katas": {}}', "\xff\xfe"])
def test_corrupt_progress_file_is_kept_aside_and_a_fresh_one_started(repo, garbage):
    repo.progress.write_bytes(garbage.encode("latin-1"))
    proc = repo.run("hint", str(TOY))
    assert proc.returncode == 0 and "hint 1 of 3" in proc.stdout
    warnings = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and ".kata-progress.json" in warnings[0], proc.stderr
    aside = list(repo.root.glob(".kata-progress.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == garbage.encode("latin-1"), "the old file must be kept"
    assert json.loads(repo.progress.read_text())["katas"][TOY_SLUG]["hints_used"] == 1
    quiet = repo.run("hint", str(TOY))
    assert quiet.stderr == "" and "hint 2 of 3" in quiet.stdout


def test_env_vars_move_the_progress_file_and_backups(repo, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    env = {"FX_KATAS_PROGRESS": str(elsewhere / "p.json"), "FX_KATAS_BACKUPS": str(elsewhere / "b")}
    repo.run("hint", str(TOY), **env)
    repo.toy_stub.write_text(TOY_SOLUTION)
    repo.run("reset", str(TOY), **env)
    assert json.loads((elsewhere / "p.json").read_text())["katas"][TOY_SLUG]["hints_used"] == 1
    assert len(list((elsewhere / "b" / TOY_SLUG).glob("*-toy.py"))) == 1
    assert not repo.progress.exists() and not repo.backups.exists()


# --- reset and restore ----------------------------------------------------------------------------------------

def test_reset_backs_up_the_attempt_before_restoring_the_committed_stub(repo):
    repo.git_commit()
    repo.toy_stub.write_text(TOY_SOLUTION + "# my work\n")
    proc = repo.run("reset", str(TOY))
    assert proc.returncode == 0 and "git" in proc.stdout
    assert repo.toy_stub.read_text() == TOY_STUB
    (backup,) = (repo.backups / TOY_SLUG).glob("*-toy.py")
    assert backup.read_text() == TOY_SOLUTION + "# my work\n"
    assert f"BACKUP={backup.name}" in proc.stdout
    again = repo.run("reset", str(TOY))
    assert again.returncode == 0 and "already the pristine stub" in again.stdout
    assert len(list((repo.backups / TOY_SLUG).iterdir())) == 1, "nothing new to back up"


def test_reset_finds_the_untouched_stub_even_after_the_learner_committed_work(repo):
    repo.git_commit()
    repo.toy_stub.write_text(TOY_SOLUTION)
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-C", str(repo.root),
                    "commit", "-qam", "my solution"], check=True)
    proc = repo.run("reset", str(TOY))
    assert proc.returncode == 0 and repo.toy_stub.read_text() == TOY_STUB


def test_reset_without_git_uses_the_snapshot_or_refuses_and_changes_nothing(repo):
    repo.toy_stub.write_text(TOY_SOLUTION)
    refused = repo.run("reset", str(TOY))
    assert refused.returncode == 2 and "cannot find the pristine" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert repo.toy_stub.read_text() == TOY_SOLUTION and not (repo.backups / TOY_SLUG).exists()
    repo.toy_stub.write_text(TOY_STUB)
    repo.run("hint", str(TOY))  # any command that sees the untouched stub snapshots it
    repo.toy_stub.write_text(TOY_SOLUTION)
    proc = repo.run("reset", str(TOY))
    assert proc.returncode == 0 and "snapshot" in proc.stdout and repo.toy_stub.read_text() == TOY_STUB


def test_restore_lists_backups_and_puts_one_back_saving_the_current_file(repo):
    repo.git_commit()
    empty = repo.run("restore")
    assert empty.returncode == 0 and "No backups" in empty.stdout
    repo.toy_stub.write_text(TOY_SOLUTION)
    repo.run("reset", str(TOY))
    (saved,) = (repo.backups / TOY_SLUG).iterdir()
    listing = repo.run("restore")
    assert saved.name in listing.stdout and "kata 9" in listing.stdout
    made = f"{saved.name[0:4]}-{saved.name[4:6]}-{saved.name[6:8]} {saved.name[9:11]}:{saved.name[11:13]}:{saved.name[13:15]}"
    assert f"saved {made}, last edited" in listing.stdout, "the listing's time is the one the name starts with"
    assert saved.name in repo.run("restore", str(TOY)).stdout
    repo.toy_stub.write_text(TOY_STUB + "# second try\n")
    put_back = repo.run("restore", str(TOY), saved.name[:15])  # a unique start of the name is enough
    assert put_back.returncode == 0 and repo.toy_stub.read_text() == TOY_SOLUTION
    contents = sorted(p.read_text() for p in (repo.backups / TOY_SLUG).iterdir())
    assert contents == sorted([TOY_SOLUTION, TOY_STUB + "# second try\n"]), "the replaced file was backed up"
    same = repo.run("restore", str(TOY), "latest")
    assert same.returncode == 0


# --- progress (checker all) -----------------------------------------------------------------------------------

def test_all_shows_every_kata_and_reuses_unchanged_results(repo):
    repo.git_commit()
    repo.toy_stub.write_text(TOY_SOLUTION)
    repo.run("hint", str(TOY))
    proc = repo.run("all", "--jobs", "2")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    toy = next(line for line in lines if "Toy kata" in line)
    assert "pass" in toy and "5/5" in toy and "1 of 3" in toy
    kata1 = next(line for line in lines if KATA1.title[:30] in line)
    assert "not started" in kata1
    assert "█" in proc.stdout and "1 of 2 katas pass" in proc.stdout
    data = json.loads(repo.run("all", "--json").stdout)
    by_number = {k["kata"]: k for k in data["katas"]}
    assert by_number[TOY]["status"] == "pass" and by_number[TOY]["cached"] is True
    assert by_number[TOY]["hints_used"] == 1 and by_number[1]["status"] == "not_started"
    assert by_number[1]["max_score"] > 0 and data["passed"] == 1 and data["total"] == 2, (by_number[1], proc.stdout)
    record = json.loads(repo.progress.read_text())["katas"][TOY_SLUG]
    assert record["status"] == "pass" and record["score"] == 5 and record["last_run"]


# --- diff -----------------------------------------------------------------------------------------------------

def test_diff_shows_a_unified_diff_without_colour_off_a_terminal(repo):
    repo.toy_stub.write_text(TOY_SOLUTION.replace('"torch"', '"aten"'))
    proc = repo.run("diff", str(TOY), "--no-graphs")
    assert proc.returncode == 0
    assert "--- katas/09_toy/toy.py (your attempt)" in proc.stdout
    assert '-    return "aten"' in proc.stdout and '+    return "torch"' in proc.stdout
    assert "\033[" not in proc.stdout


def test_diff_without_a_sample_hook_prints_the_diff_only(repo):
    proc = repo.run("diff", str(TOY))
    assert proc.returncode == 0 and "has no sample model" in proc.stdout


def test_diff_of_kata_1_shows_each_captures_dialect_side_by_side(repo):
    mutant = REPO_ROOT / "tests" / "mutants" / KATA1.slug / "no_core_tag_check.py"
    proc = repo.run("diff", "1", "--attempt", str(mutant), "--width", "150")
    assert proc.returncode == 0
    rows = [line for line in proc.stdout.splitlines() if " | " in line]
    assert any("detect_dialect: aten" in r and "detect_dialect: core_aten" in r for r in rows), proc.stdout[-3000:]
    assert any(line.startswith("symbolic_trace") for line in proc.stdout.splitlines())


def test_diff_sample_of_kata_2_lists_each_finders_breaks_and_counts_each_fixs_graphs(warm_launcher):
    mutant = REPO_ROOT / "tests" / "mutants" / "02_graph_breaks" / "fix_keeps_item.py"
    sample = run_sample(get_kata(2), mutant, launcher=warm_launcher)
    assert isinstance(sample, tuple), sample
    mine, theirs = sample
    for side in (mine, theirs):
        assert "suspects.py:28  Failed to trace builtin operator" in side and "left as found: yes" in side, side
    assert "scale_by_peak: 2 graphs" in mine and "scale_by_peak: 1 graph," in theirs


def test_diff_sample_of_kata_3_shows_the_single_user_guard_in_both_dialects(warm_launcher):
    mutant = REPO_ROOT / "tests" / "mutants" / "03_fusion_guard" / "no_guard_rewires_all_readers.py"
    sample = run_sample(get_kata(3), mutant, launcher=warm_launcher)
    assert isinstance(sample, tuple), sample
    mine, theirs = sample
    for dialect in ("MODULE", "CORE_ATEN"):
        assert f"{dialect} (" in mine and f"{dialect} (" in theirs
    assert mine.count("returned 2") == 2 and mine.count("matches eager: NO") == 2, mine
    assert theirs.count("returned 1") == 2 and "NO" not in theirs and theirs.count("kernel ran 1x") == 2, theirs


def test_diff_sample_of_kata_6_shows_where_predictions_part_from_dynamo_and_which_bucket_each_batch_used(warm_launcher):
    mutant = REPO_ROOT / "tests" / "mutants" / "06_recompiles" / "every_new_shape_compiles.py"
    sample = run_sample(get_kata(6), mutant, launcher=warm_launcher)
    assert isinstance(sample, tuple), sample
    mine, theirs = sample
    assert "Dynamo: compile (x.0 symbolic)" in mine and "Dynamo:" not in theirs, mine
    for side in (mine, theirs):
        assert "FixedDecayingHead: 1 graph(s) over 12 call(s)" in side, side
        assert "batch  3: NPU, 4 rows uploaded" in side and "batch 11: CPU" in side and "fallbacks = 1" in side, side


def test_diff_sample_of_kata_7_shows_each_rewrite_and_the_fused_ops_a_training_step_ran(warm_launcher):
    mutant = REPO_ROOT / "tests" / "mutants" / "07_custom_ops" / "rewriter_without_grad_mode_filter.py"
    sample = run_sample(get_kata(7), mutant, launcher=warm_launcher)
    assert isinstance(sample, tuple), sample
    mine, theirs = sample
    assert "grad frozen_pair: fuse_with_rewriter returned 1" in mine, mine
    assert "grad frozen_pair: fuse_with_rewriter returned 0" in theirs, theirs
    for side in (mine, theirs):
        assert "shared residual: fuse_with_rewriter returned 0" in side, side
        assert "torch.ops.npu.linear_gelu.default(l_x_, l_self_modules_fc_parameters_weight_, None, 'none')" in side
        assert "forward ran linear_gelu 1x, aten.gelu 0x; backward ran linear_gelu_backward 1x" in side, side


def test_diff_sample_of_kata_9_shows_the_int8_ops_with_their_scales_and_what_stayed_float(warm_launcher):
    mutant = REPO_ROOT / "tests" / "mutants" / "09_int8_quantization" / "lowers_only_linears.py"
    sample = run_sample(get_kata(9), mutant, launcher=warm_launcher)
    assert isinstance(sample, tuple), sample
    mine, theirs = sample
    assert "int8_add(" in theirs and "int8_add(" not in mine, (mine, theirs)
    assert " = add.Tensor(dequantize_per_tensor" in mine, mine
    for side in (mine, theirs):
        assert "gelu = gelu(dequantize_per_tensor" in side and "int8_linear(quantize_per_tensor" in side, side


def test_side_by_side_marks_changed_and_one_sided_lines():
    text = side_by_side("a\nb\nc", "a\nB\nc\nd", width=80, colour=False)
    rows = text.splitlines()[1:]
    assert rows[0].split() == ["a", "a"] and rows[1].split() == ["b", "|", "B"] and rows[3].split() == [">", "d"]


def test_looks_pristine_tells_stubs_from_attempts():
    assert looks_pristine(TOY_STUB.encode()) and looks_pristine(KATA1.stub_path.read_bytes())
    assert not looks_pristine(TOY_SOLUTION.encode()) and not looks_pristine(b"def f(:\n")


# --- watch ----------------------------------------------------------------------------------------------------

def _wait_for(path: Path, text: str, count: int, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.read_text(encoding="utf-8", errors="replace").count(text) >= count:
            return True
        time.sleep(0.1)
    return False


def test_watch_does_not_miss_a_save_made_while_the_last_run_was_going(tmp_path):
    from checker.learner.watch import _digest, wait_for_change

    attempt = tmp_path / "attempt.py"
    attempt.write_text("x = 1\n")
    before = _digest(attempt)
    attempt.write_text("x = 2\n")  # saved while the checks ran: no change of state happens after this
    started = time.monotonic()
    assert wait_for_change(attempt, before, interval=0.05, debounce=0.05) == _digest(attempt)
    assert time.monotonic() - started < 1.0


def test_watch_reruns_on_save_only_when_the_content_changes_and_stops_cleanly(repo, tmp_path):
    out = tmp_path / "watch.txt"
    proc = repo.popen("watch", str(TOY), "--interval", "0.1", "--debounce", "0.2", out=out)
    try:
        assert _wait_for(out, "score:", 1), out.read_text()
        assert "not_started" in out.read_text()
        repo.toy_stub.write_text(TOY_SOLUTION)
        assert _wait_for(out, "score:", 2), out.read_text()
        assert "score: 5/5   status: pass" in out.read_text()
        os.utime(repo.toy_stub)  # saved again, same content: no new run
        time.sleep(1.0)
        assert out.read_text().count("score:") == 2
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()
    text = out.read_text()
    assert "Stopped watching." in text and "Traceback" not in text
    assert json.loads(repo.progress.read_text())["katas"][TOY_SLUG]["status"] == "pass"


def test_watch_stops_when_the_terminal_that_started_it_is_gone(tmp_path):
    """`make watch` in a terminal that closes: its shell ends, the watch is handed to another parent, and stops
    (SIGHUP stops it too) instead of running on unseen."""
    code = (f"{sys.executable} -m checker watch 1 --attempt {tmp_path / 'not_yet.py'} --interval 0.1 "
            f"> {tmp_path / 'out.txt'} 2>&1 & echo $! > {tmp_path / 'pid'}; "
            f"until grep -q watching {tmp_path / 'out.txt'}; do sleep 0.1; done")  # the shell ends once it watches
    subprocess.run(["sh", "-c", code], cwd=REPO_ROOT, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    pid = int((tmp_path / "pid").read_text())
    deadline = time.monotonic() + 30
    while _alive_pid(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive_pid(pid), "the watch outlived the shell that started it"
    assert "waiting for it to appear" in (tmp_path / "out.txt").read_text()


def _alive_pid(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# --- grade ----------------------------------------------------------------------------------------------------

def test_grade_survives_hanging_and_crashing_attempts(repo, tmp_path):
    subs = tmp_path / "submissions"
    _write(subs / "ana" / TOY_SLUG / "toy.py", TOY_SOLUTION)
    _write(subs / "ben" / TOY_SLUG / "toy.py", (ATTEMPTS_DIR / "infinite_loop.py").read_text())
    _write(subs / "cai" / TOY_SLUG / "toy.py", (ATTEMPTS_DIR / "segfault.py").read_text())
    _write(subs / "dee" / "toy.py", (ATTEMPTS_DIR / "syntax_error.py").read_text())  # flat layout
    (subs / "eli").mkdir()                                                                # nothing handed in
    _write(subs / "fay" / TOY_SLUG / "toy.py", TOY_STUB)                                 # untouched stub
    out = tmp_path / "grades"
    # CPU seconds: the limit covers the child's start (importing torch, about 1.5 s) and the toy's checks, a few seconds
    proc = repo.run("grade", str(subs), "--out", str(out), "--gradescope", "--jobs", "2", "--time-limit", "8",
                    "--kata", str(TOY))
    assert proc.returncode == 0, proc.stderr
    rows = {row["learner"]: row for row in csv.DictReader(open(out / "gradebook.csv", encoding="utf-8"))}
    assert list(rows) == ["ana", "ben", "cai", "dee", "eli", "fay"]
    status = {name: row[f"{TOY_SLUG} status"] for name, row in rows.items()}
    assert status == {"ana": "pass", "ben": "timeout", "cai": "error", "dee": "error", "eli": "missing",
                      "fay": "not_started"}
    assert rows["ana"][TOY_SLUG] == "5" and rows["ana"]["total"] == "5" and rows["eli"]["max_total"] == "5"
    ben = json.loads((out / "ben.json").read_text())
    assert ben["learner"] == "ben" and ben["katas"][0]["status"] == "timeout" and ben["max_score"] == 5
    assert "SIGSEGV" in json.loads((out / "cai.json").read_text())["katas"][0]["message"]
    gradescope = json.loads((out / "gradescope" / "ana" / "results.json").read_text())
    assert gradescope["score"] == 5 and sum(t["max_score"] for t in gradescope["tests"]) == 5
    assert {t["status"] for t in gradescope["tests"]} == {"passed"}
    assert set(gradescope["tests"][0]) == {"name", "score", "max_score", "output", "status"}
    missing = json.loads((out / "gradescope" / "eli" / "results.json").read_text())
    assert missing["score"] == 0 and missing["tests"][0]["status"] == "failed"
    import jsonschema

    from checker.mentor.gradescope import SCHEMA_PATH

    schema = json.loads(SCHEMA_PATH.read_text())
    for results in (out / "gradescope").glob("*/results.json"):  # Gradescope's documented format, every one
        jsonschema.validate(json.loads(results.read_text()), schema)


def test_grade_reports_hints_and_time_to_pass_and_links_each_learners_review(repo, tmp_path):
    subs = tmp_path / "submissions"
    _write(subs / "ana" / TOY_SLUG / "toy.py", TOY_SOLUTION)
    _write(subs / "ana" / ".kata-progress.json", json.dumps({"version": 1, "katas": {TOY_SLUG: {
        "hints_used": 2, "first_run": "2026-12-01T10:00:00+00:00", "passed_at": "2026-12-01T11:05:00+00:00"}}}))
    _write(subs / "ben" / TOY_SLUG / "toy.py", TOY_SOLUTION.replace('"torch"', '"aten"'))
    repo.git_commit()  # the pristine stub the reviews diff against is the committed one
    repo.toy_stub.write_text(TOY_SOLUTION)  # ...never the grader's own working file
    out = tmp_path / "grades"
    proc = repo.run("grade", str(subs), "--out", str(out), "--kata", str(TOY), "--gradescope", "--review-reference")
    assert proc.returncode == 0, proc.stderr
    rows = {row["learner"]: row for row in csv.DictReader(open(out / "gradebook.csv", encoding="utf-8"))}
    assert not any(KATA1.slug in column for column in rows["ana"]), "only the katas graded"
    assert (rows["ana"][f"{TOY_SLUG} hints"], rows["ana"][f"{TOY_SLUG} time to pass"]) == ("2", "1h 05m")
    assert (rows["ben"][f"{TOY_SLUG} hints"], rows["ben"][f"{TOY_SLUG} time to pass"]) == ("", "")
    review = (out / rows["ben"]["review"]).read_text()
    assert "fail, 2/5" in review and "detect_dialect(None) returned 'aten'" in review and "Kata 1 " not in review
    assert "Failing checks (1 of 2" in review and "- **basics**" in review
    stub_diff = review.split("What they wrote (the pristine stub -> their file):")[1].split("Against the reference")[0]
    assert '-    raise NotImplementedError("detect_dialect' in stub_diff and '+    return "aten"' in stub_diff
    reference_diff = review.split("Against the reference")[1]
    assert '-    return "aten"' in reference_diff and '+    return "torch"' in reference_diff
    plain = repo.run("grade", str(subs), "--out", str(tmp_path / "plain"), "--kata", str(TOY), "--quiet")
    assert plain.returncode == 0
    assert "Against the reference" not in (tmp_path / "plain" / rows["ben"]["review"]).read_text()
    assert "hints used: 2" in (out / rows["ana"]["review"]).read_text()
    assert "(hints used: 2; time to pass: 1h 05m)" in json.loads((out / "gradescope" / "ana" / "results.json").read_text())["output"]


def test_grade_of_one_submission_folder_writes_results_json_at_the_top(repo, tmp_path):
    sub = tmp_path / "submission"  # as Gradescope hands it over: the learner's files, here flat
    _write(sub / "toy.py", TOY_SOLUTION)
    out = tmp_path / "results"
    proc = repo.run("grade", str(sub), "--out", str(out), "--gradescope", "--kata", str(TOY), "--quiet")
    assert proc.returncode == 0 and proc.stderr == ""
    assert json.loads((out / "results.json").read_text())["score"] == 5


USER_SLUG = "10_user"
USER_STUB = '''"""A kata that builds on the toy kata: it loads the learner's own toy.py."""
from katas.common.learner import your_kata

toy = your_kata("09_toy", "toy.py")


def answer():
    """toy.node_dialect(None), through your own toy kata."""
    raise NotImplementedError("answer")
'''
USER_ATTEMPT = '''from katas.common.learner import your_kata

toy = your_kata("09_toy", "toy.py")


def answer():
    return toy.node_dialect(None)
'''
USER_CHECKS = '''from checker.kit import Checks, expect

CHECKS = Checks()


@CHECKS.check(stage="basics", weight=1)
def answer_is_neutral(ctx):
    "answer() is 'neutral'"
    got = ctx.attempt.answer()
    expect(got == "neutral", f"answer() returned {got!r}")
'''


def test_grade_of_a_kata_that_loads_another_uses_the_learners_file_or_the_committed_stub(repo, tmp_path):
    """Like kata 5 with katas 3 and 4: a learner's own toy.py when they handed it in; else the pristine stub as
    committed, never the grader's working-tree file (here solved, as a mentor's would be). The review, the
    gradebook and the learner's JSON say which was used."""
    _write(repo.root / "katas" / USER_SLUG / "user.py", USER_STUB)
    _write(repo.root / "katas" / USER_SLUG / "hidden" / "checks.py", USER_CHECKS)
    _write(repo.root / "solutions" / USER_SLUG / "user.py", USER_ATTEMPT)
    with open(repo.root / "katas" / "katas.toml", "a", encoding="utf-8") as manifest:
        manifest.write(f'''
[[kata]]
number = 10
slug = "{USER_SLUG}"
title = "Uses the toy"
module = "user.py"
stages = ["basics"]
time_limit = 60
''')
    repo.git_commit()
    repo.toy_stub.write_text(TOY_SOLUTION)  # the mentor's own solved toy kata: must not be used
    subs = tmp_path / "submissions"
    _write(subs / "ana" / USER_SLUG / "user.py", USER_ATTEMPT)                     # no toy.py handed in
    _write(subs / "ben" / USER_SLUG / "user.py", USER_ATTEMPT)
    _write(subs / "ben" / TOY_SLUG / "toy.py", TOY_SOLUTION)
    out = tmp_path / "grades"
    proc = repo.run("grade", str(subs), "--out", str(out), "--kata", "10", "--jobs", "2", "--quiet")
    assert proc.returncode == 0, proc.stderr
    rows = {row["learner"]: row for row in csv.DictReader(open(out / "gradebook.csv", encoding="utf-8"))}
    assert rows["ben"][f"{USER_SLUG} status"] == "pass"
    assert rows["ana"][f"{USER_SLUG} status"] != "pass", "the grader's own solved toy.py was used"
    assert rows["ana"][f"{USER_SLUG} uses"] == "kata 9: not handed in, the pristine stub was used"
    assert rows["ben"][f"{USER_SLUG} uses"] == "kata 9: your toy.py"
    assert "kata 9: not handed in, the pristine stub was used" in (out / rows["ana"]["review"]).read_text()
    assert json.loads((out / "ben.json").read_text())["katas"][0]["uses"] == ["kata 9: your toy.py"]


def test_a_review_lists_every_failing_check_correctness_first():
    from checker.mentor.grade import REVIEW_MAX_CHECKS, failing_checks_lines
    from checker.run.runner import CheckResult, KataResult

    checks = [CheckResult(f"c{i}", "nodes", f"check {i}", "fail", 1, message=f"wrong {i}\nsecond line")
              for i in range(50)]
    checks += [CheckResult("numerics", "aten", "the numbers match eager", "fail", 1, message="x" * 500),
               CheckResult("ok", "nodes", "fine", "pass", 1)]
    lines = failing_checks_lines(KATA1, KataResult(1, KATA1.title, "fail", 1, 52, checks, "", "", 0.0))
    assert lines[0].startswith("Failing checks (51 of 52") and lines[1] == "- **aten** (correctness and guards)"
    assert "the numbers match eager" in lines[2] and len(lines[2]) < 220 and lines[2].endswith("…")
    listed = [line for line in lines if line.startswith("  - ")]
    assert len(listed) == REVIEW_MAX_CHECKS
    assert lines[-1] == "- ... and 11 more failing checks (the learner's JSON lists every one)"
    assert "second line" not in "\n".join(lines)


# --- bad input ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, complaint", [
    (("hint", "42"), "there is no kata 42"),
    (("hint", "x"), "invalid int value"),
    (("reset",), "say which kata to reset"),
    (("reset", "42"), "there is no kata 42"),
    (("restore", "9", "no-such-backup"), "has no backups"),
    (("restore", "no-such-backup"), "kata number first"),
    (("watch", "42"), "there is no kata 42"),
    (("diff", "9", "--attempt", "nope.py"), "no such file"),
    (("grade", "no/such/dir"), "no such directory"),
    (("grade",), "required"),
    (("all", "--jobs", "0"), "must be 1 or more"),
])
def test_bad_input_is_one_line_and_exit_2(repo, args, complaint):
    proc = repo.run(*args)
    assert proc.returncode == 2, proc.stdout
    assert complaint in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_restore_of_an_unknown_backup_names_it(repo):
    repo.git_commit()
    repo.toy_stub.write_text(TOY_SOLUTION)
    repo.run("reset", str(TOY))
    proc = repo.run("restore", str(TOY), "20000101-000000-toy.py")
    assert proc.returncode == 2 and "no backup named '20000101-000000-toy.py'" in proc.stderr


def test_make_targets_pass_the_kata_only_when_given():
    def dry(*args: str) -> str:
        # run as a top-level make, whatever make this suite runs under (`make bench` runs `make test`)
        env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "ARGS", "N", "BACKUP")}
        proc = subprocess.run(["make", "-n", "-s", "--no-print-directory", "-C", str(REPO_ROOT), *args],
                              capture_output=True, text=True, env=env)
        return proc.stdout.strip().splitlines()[-1]

    assert dry("restore").endswith("-m checker restore")
    assert dry("restore", "N=3", "BACKUP=b.py").endswith("-m checker restore 3 b.py")
    assert dry("reset").split("||")[0].strip().endswith("-m checker reset"), "without N: the checker's guidance"
    assert dry("hint", "N=2").endswith("-m checker hint 2")
    assert dry("progress").endswith("-m checker all")
    assert dry("diff", "N=2").endswith("-m checker diff 2")
    assert dry("watch", "N=2").endswith("-m checker watch 2")


def test_progress_says_which_earlier_katas_a_kata_builds_on_until_they_pass():
    from checker.core.manifest import load_katas
    from checker.learner.overview import Row, render

    def rows(status_of_3: str) -> list[Row]:
        return [Row(k, {3: status_of_3}.get(k.number, "not_started"), 0, 10, 0, 3, False, "") for k in load_katas()]

    waiting = render(rows("fail"), colour=False, elapsed=1.0)
    assert "builds on your katas 3, 4: finish them first" in waiting
    assert "builds on your kata 4: finish it first" in render(rows("pass"), colour=False, elapsed=1.0)


def test_setup_takes_torch_from_the_cpu_index_only_where_the_configured_one_brings_the_cuda_build():
    import importlib.util

    spec = importlib.util.spec_from_file_location("torch_wheel", REPO_ROOT / "setup" / "torch_wheel.py")
    wheel = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wheel)
    report = {"install": [{"metadata": {"name": "torch", "version": "2.13.0"}}]}
    assert wheel.resolved_torch_version(report) == "2.13.0"
    assert wheel.resolved_torch_version({"install": []}) is None
    assert wheel.needs_cpu_index("Linux", "x86_64", None, "2.13.0") is True, "PyPI's Linux wheel is the CUDA build"
    assert wheel.needs_cpu_index("Linux", "x86_64", None, "2.13.0+cpu") is False, "this machine's index: CPU already"
    assert wheel.needs_cpu_index("Linux", "x86_64", "2.13.0+cu126", None) is False, "an installed torch stays"
    assert wheel.needs_cpu_index("Darwin", "arm64", None, "2.13.0") is False, "macOS wheels are CPU builds"
    assert wheel.needs_cpu_index("Linux", "aarch64", None, "2.13.0") is False
    assert wheel.needs_cpu_index("Linux", "x86_64", None, None) is False, "no answer from the index: pip says why"
    here = subprocess.run([sys.executable, str(REPO_ROOT / "setup" / "torch_wheel.py")], capture_output=True,
                          text=True, timeout=120)
    assert (here.returncode, here.stdout) == (0, ""), "torch is installed here: nothing to choose"


def test_a_recorded_run_goes_stale_with_every_file_its_verdict_depends_on():
    """`make progress` reuses a run while its fingerprint holds: a file the fingerprint names but cannot read would
    let a changed checker or device keep serving old verdicts."""
    from checker.core.manifest import load_katas
    from checker.learner.progress import fingerprint_files

    for kata in load_katas():
        files = fingerprint_files(kata, kata.stub_path)
        missing = [str(p) for p in files if not p.is_file()]
        assert not missing, f"{kata.slug}: the fingerprint reads files that do not exist: {missing}"
        names = {p.relative_to(REPO_ROOT).as_posix() for p in files}
        assert {"katas/common/npu/device.py", "checker/kit/checks.py", "checker/trusted/checks_process.py",
                "checker/attempt/worker.py", "checker/channel/wire.py"} <= names
