"""The checker survives whatever an attempt does, and its outputs keep their documented shape.

Most runs here are forked by a warm server (the `warm_launcher` fixture); the infinite loop and the segfault
start cold (tests/test_warm.py runs both warm), as do the command-line runs.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from checker.core.cpu_time import process_cpu_seconds, tree_cpu_seconds
from checker.core.manifest import REPO_ROOT, get_kata
from checker.run.runner import WALL_FACTOR, run_kata
from conftest import ATTEMPTS_DIR

KATA1 = get_kata(1)
ONE_CHECK = ("call_module_node_is_module",)


def checker_cli(*args: str, cwd=REPO_ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "checker", *args], capture_output=True, text=True, cwd=cwd, env=env)


def test_syntax_error_is_reported_with_file_and_line(warm_launcher):
    result = run_kata(KATA1, ATTEMPTS_DIR / "syntax_error.py", only=ONE_CHECK, launcher=warm_launcher)
    assert result.status == "error"
    assert "syntax_error.py:1" in result.message and "SyntaxError" in result.message


def test_import_error_names_the_missing_name(warm_launcher):
    result = run_kata(KATA1, ATTEMPTS_DIR / "import_error.py", only=ONE_CHECK, launcher=warm_launcher)
    assert result.status == "error"
    assert "import_error.py:2" in result.message and "no_such_name" in result.message


def test_infinite_loop_times_out_after_its_cpu_seconds_and_keeps_finished_checks():
    """The limit counts CPU seconds of the checks process and everything it started (the attempt's worker
    included), so a busy machine does not turn a correct attempt into a timeout (checker/core/cpu_time.py)."""
    result = run_kata(KATA1, ATTEMPTS_DIR / "infinite_loop.py", only=ONE_CHECK, time_limit=5)
    assert result.status == "timeout"
    assert result.checks[0].status == "timeout"
    # On a machine busy enough that the loop gets under a third of a core, the wall-clock backstop ends it first
    # and says so; either way the run stops.
    assert ("5 s of computing time" in result.message and "infinite loop" in result.message
            or "other work kept this machine busy" in result.message), result.message
    assert result.duration_s < WALL_FACTOR * 5 + 10


def test_the_checkers_start_up_is_not_charged_to_the_attempt():
    """The limit counts from the moment the attempt is imported and its checks begin ("ready"): importing torch and
    Dynamo twice (checks process and worker) costs more than 2 CPU seconds on every machine measured, so a limit of
    2 passes only because the start-up is not charged (checker/run/runner.py, STARTUP_CPU_SECONDS)."""
    result = run_kata(KATA1, KATA1.solution_path, only=ONE_CHECK, time_limit=2)
    assert result.status == "pass", result.message
    assert result.timings.get("imports", 0) + result.timings.get("worker", 0) > 0


def test_a_loop_at_import_times_out_and_says_it_was_importing():
    result = run_kata(KATA1, ATTEMPTS_DIR / "loops_at_import.py", only=ONE_CHECK, time_limit=3)
    assert result.status == "timeout"
    assert "3 s of computing time while your file was being imported" in result.message, result.message


def test_an_attempt_that_waits_is_stopped_by_the_wall_clock_backstop():
    result = run_kata(KATA1, ATTEMPTS_DIR / "waits_forever.py", only=ONE_CHECK, time_limit=4)
    assert result.status == "timeout"
    assert result.checks[0].status == "timeout"
    assert f"ran {WALL_FACTOR * 4:g} s without finishing" in result.message and "time.sleep" in result.message, \
        result.message


def test_without_a_cpu_clock_the_limit_is_wall_time(monkeypatch, warm_launcher):
    """Where /proc is missing (macOS), CPU seconds cannot be read: the limit is then wall-clock seconds, not three
    times as many."""
    import checker.run.runner as runner

    monkeypatch.setattr(runner, "can_measure", lambda: False)
    monkeypatch.setattr(runner, "tree_cpu_seconds", lambda pid: 0.0)
    # forked warm: a cold start on a busy machine could spend the 6 s before the check starts
    result = run_kata(KATA1, ATTEMPTS_DIR / "waits_forever.py", only=ONE_CHECK, time_limit=6, launcher=warm_launcher)
    assert result.status == "timeout" and result.duration_s < 2 * 6 + 5, result.duration_s
    assert "did not finish within 6 s while" in result.message and "code that waits" in result.message, result.message


def test_cpu_seconds_of_a_process_tree_count_its_grandchildren():
    burn = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\ntime.sleep(30)"
    code = (f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {burn!r}])\n"
            "time.sleep(30)")
    parent = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 60
        while tree_cpu_seconds(parent.pid) < 0.6 + process_cpu_seconds(parent.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert tree_cpu_seconds(parent.pid) >= 0.6 + process_cpu_seconds(parent.pid)
    finally:
        subprocess.run(["pkill", "-P", str(parent.pid)])
        parent.kill()
        parent.wait()
    assert tree_cpu_seconds(parent.pid) == 0.0, "a process that is gone has spent nothing we can read"


def test_segfault_is_an_error_naming_the_signal():
    result = run_kata(KATA1, ATTEMPTS_DIR / "segfault.py", only=ONE_CHECK)
    assert result.status == "error"
    assert "SIGSEGV" in result.message


def test_sys_exit_at_import_cannot_fake_a_pass(warm_launcher):
    result = run_kata(KATA1, ATTEMPTS_DIR / "exits_zero_at_import.py", only=ONE_CHECK, launcher=warm_launcher)
    assert result.status == "error"
    assert "sys.exit" in result.message or "SystemExit" in result.message


def test_exit_inside_a_check_fails_that_check(warm_launcher):
    result = run_kata(KATA1, ATTEMPTS_DIR / "exits_inside_a_check.py",
                      only=("call_module_node_is_module", "graph_without_ops_is_torch"), launcher=warm_launcher)
    by_id = {c.id: c for c in result.checks}
    assert by_id["call_module_node_is_module"].status == "error"
    assert "sys.exit" in by_id["call_module_node_is_module"].message
    assert result.status == "error" and "exited with code 0" in result.message  # os._exit(0) ended the process


def test_printed_pass_and_forged_events_are_ignored(warm_launcher):
    result = run_kata(KATA1, ATTEMPTS_DIR / "fakes_pass_output.py", only=ONE_CHECK + ("graph_without_ops_is_torch",),
                      launcher=warm_launcher)
    assert result.status == "fail"
    assert result.score == 0
    assert all(c.status == "fail" for c in result.checks)


def test_checker_never_writes_beside_the_attempt(tmp_path, warm_launcher):
    attempt = tmp_path / "dialects.py"
    attempt.write_text(KATA1.stub_path.read_text())
    before = attempt.stat().st_mtime_ns, attempt.read_bytes()
    run_kata(KATA1, attempt, only=ONE_CHECK, launcher=warm_launcher)
    assert (attempt.stat().st_mtime_ns, attempt.read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dialects.py"]


def test_json_output_has_the_documented_shape():
    proc = checker_cli("kata", "1", "--json", "--check", "call_module_node_is_module", "--check", "getitem_is_neutral")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert {"kata", "title", "status", "score", "max_score", "checks", "attempt", "torch_version", "duration_s",
            "schema_version"} <= data.keys()
    assert data["status"] == "not_started" and data["kata"] == 1 and data["schema_version"] == 1
    assert [set(c) for c in data["checks"]] == [{"id", "stage", "name", "status", "weight", "message"}] * 2
    assert "Traceback" not in proc.stdout


def test_solution_exits_zero_and_text_output_ends_with_score():
    proc = checker_cli("kata", "1", "--solution", "--check", "getitem_is_neutral")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "score: 1/1   status: pass" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "NumPy" not in proc.stdout + proc.stderr


def test_a_failing_check_shows_its_id_and_how_to_run_it_alone_and_messages_wrap_at_words():
    from checker.run.report import render_text
    from checker.run.runner import CheckResult, KataResult

    long = "The pass fused 0 of 2 safe pairs in a symbolic_trace graph: " + "a matcher written for aten ops " * 4
    checks = [CheckResult("fuses_pairs", "module", "fuses safe pairs", "fail", 2, message=long),
              CheckResult("keeps_others", "module", "keeps other nodes", "pass", 1)]
    result = KataResult(3, "t", "fail", 1, 3, checks, "fusion.py", "2.13.0", 1.0)
    text = render_text(get_kata(3), result, columns=60)
    assert "[fuses_pairs]" in text and "[keeps_others]" not in text
    assert 'make kata N=3 ARGS="--check fuses_pairs"' in text.replace("\n", " ")
    wrapped = [line for line in text.splitlines() if line.startswith("      ")] + text.split("Next:")[1].splitlines()
    assert len(wrapped) > 5 and all(len(line) <= 60 for line in wrapped), text
    assert "aten ops" in text.replace("\n      ", " "), "wrapped between words, not inside one"
    assert max(len(line) for line in render_text(get_kata(3), result).splitlines()) > 60, "no terminal, no wrap"


def test_one_exception_raised_on_many_graphs_is_shown_once():
    from checker.run.report import render_text
    from checker.run.runner import CheckResult, KataResult

    def raised(graph: str) -> str:
        return f"fuse_linear_gelu on the {graph} graph raised KeyError at fusion.py:8 in fuse(): '{graph}'\nits graph"

    checks = [CheckResult(f"c{i}", "module", f"check {i}", "error", 1, message=raised(g))
              for i, g in enumerate(("dynamo", "export", "make_fx"))]
    checks.append(CheckResult("c3", "module", "check 3", "error", 1, message="raised KeyError at fusion.py:9 in f(): 1"))
    text = render_text(get_kata(3), KataResult(3, "t", "fail", 0, 4, checks, "fusion.py", "2.13.0", 1.0))
    assert text.count("its graph") == 1, text
    assert text.count("the same error as [c0] above: raised KeyError at fusion.py:8 in fuse()") == 2, text
    assert "fusion.py:9" in text, "another line is another mistake"
    verbose = render_text(get_kata(3), KataResult(3, "t", "fail", 0, 4, checks, "fusion.py", "2.13.0", 1.0),
                          verbose=True)
    assert verbose.count("its graph") == 3, "--verbose shows every message whole"


@pytest.mark.parametrize("args, complaint", [
    (("kata", "99"), "there is no kata 99"),
    (("kata", "1", "--attempt", "no/such/file.py"), "no such file"),
    (("kata", "1", "--check", "no_such_check"), "no check named no_such_check"),
])
def test_bad_input_is_one_clear_line(args, complaint):
    proc = checker_cli(*args)
    assert proc.returncode == 2
    assert complaint in proc.stderr and "Traceback" not in proc.stderr


def test_wrong_torch_version_is_refused_unless_overridden(tmp_path):
    fake_dist = tmp_path / "torch-9.9.9.dist-info"
    fake_dist.mkdir()
    (fake_dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 9.9.9\n")
    code = ("import sys; sys.path.insert(0, %r); from checker.run.runner import torch_version_problem; "
            "print(torch_version_problem())" % str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT)
    assert "torch 9.9.9 is installed" in proc.stdout and "--any-torch" in proc.stdout


def test_two_shards_run_every_check_once_in_kata_order(warm_launcher):
    checks = ("call_module_node_is_module", "getitem_is_neutral", "graph_without_ops_is_torch")
    one = run_kata(KATA1, ATTEMPTS_DIR / "fakes_pass_output.py", only=checks, launcher=warm_launcher)
    two = run_kata(KATA1, ATTEMPTS_DIR / "fakes_pass_output.py", only=checks, shards=2, launcher=warm_launcher)
    assert [(c.id, c.status, c.message) for c in two.checks] == [(c.id, c.status, c.message) for c in one.checks]
    assert [c.id for c in two.checks] == list(checks) and two.status == "fail"


def test_a_crash_in_one_shard_is_an_error_for_the_attempt(warm_launcher):
    result = run_kata(KATA1, ATTEMPTS_DIR / "segfault.py", only=ONE_CHECK + ("graph_without_ops_is_torch",), shards=2,
                      launcher=warm_launcher)
    assert result.status == "error" and "SIGSEGV" in result.message


def test_a_failing_example_is_kept_and_tried_first_on_the_next_run(tmp_path, warm_launcher):
    """The learner's own runs keep each fuzz check's failing examples (Hypothesis's example database, in
    `.kata-examples/` beside the progress file) and replay them first: the same verdict, the failure found again
    without generating its way there. A grade keeps none (its runs are the seed's alone)."""
    kata = get_kata(1)
    mutant = REPO_ROOT / "tests" / "mutants" / "01_dialects" / "every_packet_is_torch.py"
    only = ("random_mlps_in_cond_no_grad_custom_op_or_symbolic_batch",)
    first = run_kata(kata, mutant, only=only, examples=tmp_path / "examples", launcher=warm_launcher)
    assert first.status == "fail"
    kept = [p for p in (tmp_path / "examples").rglob("*") if p.is_file()]
    assert kept, "no failing example was kept"
    second = run_kata(kata, mutant, only=only, examples=tmp_path / "examples", launcher=warm_launcher)
    assert [c.status for c in second.checks] == [c.status for c in first.checks]
    assert second.checks[0].message.split("(replay")[0] == first.checks[0].message.split("(replay")[0]
    plain = run_kata(kata, mutant, only=only, launcher=warm_launcher)
    assert plain.checks[0].message == first.checks[0].message


FAILS_THEN_WAITS = '''import time

CALLS = []


def node_dialect(node):
    CALLS.append(node)
    if len(CALLS) == 1:
        raise ValueError("the first call fails at once")
    time.sleep(10_000)


detect_dialect = node_dialect
'''


def test_each_result_reaches_the_live_report_the_moment_its_check_ends(tmp_path, warm_launcher):
    """A failing check is shown while later checks still run (here: one that waits until the backstop)."""
    attempt = tmp_path / "fails_then_waits.py"
    attempt.write_text(FAILS_THEN_WAITS)
    heard: list[tuple[float, dict]] = []
    result = run_kata(KATA1, attempt, only=("call_module_node_is_module", "getitem_is_neutral"), time_limit=4,
                      first=("call_module_node_is_module",), on_event=lambda e: heard.append((time.monotonic(), e)),
                      launcher=warm_launcher)
    ended = time.monotonic()
    first_result = next((at, e) for at, e in heard if e.get("event") == "result")
    assert first_result[1]["id"] == "call_module_node_is_module" and first_result[1]["status"] == "error"
    assert ended - first_result[0] > 3, "the first result arrived only when the run ended"
    assert [e["id"] for _, e in heard if e.get("event") == "start"][:2] == ["call_module_node_is_module",
                                                                               "getitem_is_neutral"]
    assert result.status == "timeout" and [c.id for c in result.checks][0] == "call_module_node_is_module"


def test_first_checks_run_first_and_the_report_keeps_kata_order(warm_launcher):
    checks = ("call_module_node_is_module", "getitem_is_neutral", "graph_without_ops_is_torch")
    heard: list[dict] = []
    result = run_kata(KATA1, KATA1.stub_path, only=checks, first=checks[::-1], launcher=warm_launcher,
                      on_event=heard.append)
    assert [e["id"] for e in heard if e.get("event") == "start"] == list(checks[::-1])
    assert [c.id for c in result.checks] == list(checks)


def test_live_report_prints_failures_as_they_come_and_the_report_does_not_repeat_them():
    import io

    from checker.run.live import LiveReport
    from checker.run.report import render_text
    from checker.run.runner import CheckResult, KataResult

    kata = get_kata(3)
    screen = io.StringIO()
    live = LiveReport(kata, screen, colour=False, columns=70)
    live({"event": "plan", "checks": [["a", "module", "fuses safe pairs", 2], ["b", "module", "keeps others", 1]]})
    live({"event": "start", "id": "a"})
    assert "0/2 checks" in screen.getvalue() and "running: fuses safe pairs" in screen.getvalue()
    live({"event": "result", "id": "a", "status": "fail", "message": "fused 0 of 2 safe pairs"})
    assert "✗" in screen.getvalue() and "fused 0 of 2 safe pairs" in screen.getvalue() and "[a]" in screen.getvalue()
    live({"event": "result", "id": "b", "status": "pass", "message": ""})
    live.close()
    assert "2/2 checks · 1 failing" in screen.getvalue() and "keeps others" not in screen.getvalue()
    assert screen.getvalue().endswith("\r\033[K\n"), "the progress line is cleared before the report"
    checks = [CheckResult("a", "module", "fuses safe pairs", "fail", 2, message="fused 0 of 2 safe pairs"),
              CheckResult("b", "module", "keeps others", "pass", 1)]
    text = render_text(kata, KataResult(3, "t", "fail", 1, 3, checks, "fusion.py", "2.13.0", 1.0),
                       shown=frozenset(live.shown))
    assert "fuses safe pairs" in text and "fused 0 of 2" not in text


def test_checks_that_failed_last_time_run_first_then_the_likeliest_catchers():
    from checker.core.mutation_report import load_report
    from checker.run.live import first_checks

    kata = get_kata(2)
    report = load_report(kata)
    order = first_checks(kata, ["reports_file_and_line"])
    assert order[0] == "reports_file_and_line" and len(order) == len(set(order))
    assert set(order) >= set(report.checks) - {"reports_file_and_line"}
    catches = {c: sum(c in m.failing for m in report.hand_mutants) + report.checks[c].get("kills", 0)
               for c in report.checks}
    never = [c for c in order if catches.get(c) == 0]
    assert all(order.index(c) > order.index(best) for c in never
               for best in [max(catches, key=lambda k: catches[k])]), "a check that catches nothing goes last"


def test_a_check_stuck_in_a_loop_is_stopped_at_its_own_limit_with_the_line_and_the_others_run_on(warm_launcher):
    """Each check has its own CPU-second limit (from what it took on the reference): past it, the check times
    out naming where the attempt's code was, and the next check gets a fresh worker; the kata's limit is only the
    backstop."""
    checks = ("call_module_node_is_module", "getitem_is_neutral")
    result = run_kata(KATA1, ATTEMPTS_DIR / "infinite_loop.py", only=checks, time_limit=120, check_time_limit=3,
                      launcher=warm_launcher)
    assert [c.status for c in result.checks] == ["timeout", "timeout"], [c.message for c in result.checks]
    for check in result.checks:
        assert "3 s of CPU time" in check.message and "infinite_loop.py:" in check.message, check.message
        assert " in node_dialect()" in check.message or " in detect_dialect()" in check.message, check.message
    assert result.status == "fail" and result.duration_s < 60, (result.status, result.duration_s)


def test_a_failing_example_found_before_the_time_limit_is_the_verdict_not_a_timeout(warm_launcher):
    """A check stopped at its limit while Hypothesis was making a failing example smaller reports that example (a
    failure with its counterexample), not "look for a loop that never ends"."""
    check = "random_mlps_in_every_capture"
    result = run_kata(KATA1, ATTEMPTS_DIR / "wrong_then_loops.py", only=(check,), time_limit=120,
                      check_time_limit=3, launcher=warm_launcher)
    [found] = result.checks
    assert found.status == "fail", (found.status, found.message)
    assert "'not a dialect'" in found.message and "A failing example found:" in found.message, found.message
    assert "cut short" in found.message and "loop that never ends" not in found.message, found.message


def test_each_check_limit_comes_from_its_time_on_the_reference():
    from checker.core.mutation_report import load_report
    from checker.trusted.checks_process import MIN_CHECK_LIMIT, check_limits

    kata = get_kata(5)
    learner, deep = check_limits(kata.checks_path, "learner"), check_limits(kata.checks_path, "deep")
    seconds = {c: s["seconds"] for c, s in load_report(kata).checks.items()}
    assert set(learner) == set(seconds) and all(learner[c] >= max(MIN_CHECK_LIMIT, 10 * seconds[c]) for c in seconds)
    assert all(deep[c] > learner[c] for c in learner)


def test_compact_report_folds_stages_that_pass_into_one_line():
    from checker.run.report import render_text
    from checker.run.runner import CheckResult, KataResult

    checks = [CheckResult("a", "module", "fuses safe pairs", "fail", 2, message="fused 0 of 2"),
              CheckResult("b", "module", "keeps others", "pass", 1),
              CheckResult("c", "aten", "fuses aten pairs", "pass", 2), CheckResult("d", "aten", "keeps aten", "pass", 1)]
    result = KataResult(3, "t", "fail", 4, 6, checks, "fusion.py", "2.13.0", 1.0)
    compact = render_text(get_kata(3), result, compact=True)
    assert "aten  ✓ all 2 checks (3/3)" in compact and "fuses aten pairs" not in compact
    assert "keeps others" in compact and "fused 0 of 2" in compact, "a stage with a failure is shown whole"
    assert "fuses aten pairs" in render_text(get_kata(3), result)


def test_the_report_names_the_earlier_katas_files_an_attempt_ran_with():
    from checker.run.report import render_text
    from checker.run.runner import KataResult

    kata5 = get_kata(5)
    def header(attempt) -> str:
        return render_text(kata5, KataResult(5, "t", "fail", 0, 1, [], str(attempt), "2.13.0", 1.0)).splitlines()[2]

    assert header(kata5.stub_path) == "with: katas/03_fusion_guard/fusion.py, katas/04_op_support/op_support.py"
    assert header(kata5.solution_path) == ("with: solutions/03_fusion_guard/fusion.py, "
                                           "solutions/04_op_support/op_support.py")
    kata3 = get_kata(3)
    assert "with:" not in render_text(kata3, KataResult(3, "t", "fail", 0, 1, [], str(kata3.stub_path), "2.13.0", 1.0))


def test_checks_stopped_at_the_same_line_are_shown_once():
    from checker.run.report import render_text
    from checker.run.runner import CheckResult, KataResult

    stopped = ("stopped: your code computed for 10 s of CPU time in this check without finishing, at loop.py:2 in "
               "node_dialect(). Look for a loop that never ends.")
    checks = [CheckResult(f"c{i}", "nodes", f"check {i}", "timeout", 1, message=stopped) for i in range(3)]
    text = render_text(get_kata(1), KataResult(1, "t", "fail", 0, 3, checks, "loop.py", "2.13.0", 1.0))
    assert text.count("Look for a loop") == 1, text
    assert text.count("the same error as [c0] above: a time-out at loop.py:2 in node_dialect()") == 2, text


def test_the_mutation_oracle_loads_an_attempt_where_only_torch_backends_are_registered(fresh_dynamo):
    """A worker imports the attempt in a process where only torch's own torch.compile backends exist. The oracle
    loads the checks and the reference in the attempt's process first; a name they registered must be gone
    before the attempt loads, or an attempt that keeps a taken name keeps the reference's (kata 5, "kata_npu")."""
    import torch._dynamo
    from torch._dynamo.backends import registry

    from checker.author.oracle import _forget_backends_but, _torch_backends

    torch_own = _torch_backends()
    assert {"eager", "aot_eager", "inductor"} <= torch_own

    def reference_backend(gm, example_inputs):
        return gm.forward

    torch._dynamo.register_backend(reference_backend, name="fx_katas_test_taken")
    try:
        _forget_backends_but(torch_own)
        assert "fx_katas_test_taken" not in torch._dynamo.list_backends(exclude_tags=())
        assert torch_own <= set(registry._COMPILER_FNS)
    finally:
        registry._COMPILER_FNS.pop("fx_katas_test_taken", None)
        registry._BACKENDS.pop("fx_katas_test_taken", None)
