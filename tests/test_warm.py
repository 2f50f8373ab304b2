"""The warm server (checker/run/warm.py): runs it forks score as cold runs do (tests/test_katas.py compares every
kata's reference, stub and mutant both ways); here, how it lives and dies, and what it refuses.

Each test that needs the learner's per-user server gets its own folder for it (FX_KATAS_WARM_DIR), so no test
meets the server of a person working in this repository, and ends every server it started.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from checker.core.manifest import REPO_ROOT, get_kata
from checker.run.runner import run_kata
from checker.run.warm import (PrivateServer, WarmLauncher, WarmUnavailable, _alive, learner_launcher, server_status,
                          socket_path, stop_server)
from conftest import ATTEMPTS_DIR

KATA2 = get_kata(2)
ONE_CHECK = ("reports_file_and_line",)


def _cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "checker", *args], capture_output=True, text=True, cwd=REPO_ROOT,
                          env=env, timeout=240)


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def learner_env(tmp_path: Path, monkeypatch):
    """The environment of a learner whose warm server lives in a folder of its own (short: a socket's path
    has at most 108 bytes); every server left is stopped after."""
    folder = tempfile.mkdtemp(prefix="fxw-", dir="/tmp")
    env = {**os.environ, "FX_KATAS_WARM": "1", "FX_KATAS_WARM_DIR": folder, "NO_COLOR": "1",
           "FX_KATAS_PROGRESS": str(tmp_path / "progress.json"), "FX_KATAS_BACKUPS": str(tmp_path / "backups")}
    monkeypatch.setenv("FX_KATAS_WARM", "1")
    monkeypatch.setenv("FX_KATAS_WARM_DIR", env["FX_KATAS_WARM_DIR"])
    yield env
    status = server_status()
    stop_server()
    shutil.rmtree(folder, ignore_errors=True)
    if status:
        assert _gone(status["pid"]), "the warm server did not stop"


def test_the_first_run_starts_cold_then_the_server_forks_runs_until_its_environment_changes(learner_env, monkeypatch):
    first = _cli("kata", "2", "--solution", "--json", "--verbose", *(f"--check={c}" for c in ONE_CHECK), env=learner_env)
    learner_launcher(wait=True)  # the server the first run started in the background: wait until it listens
    second = _cli("kata", "2", "--solution", "--json", "--verbose", *(f"--check={c}" for c in ONE_CHECK), env=learner_env)
    one, two = json.loads(first.stdout), json.loads(second.stdout)
    assert (one["status"], two["status"]) == ("pass", "pass")
    assert (one["start"], two["start"]) == ("cold", "warm")
    assert two["timings"]["imports"] < 0.2, "a forked run imports nothing: torch came with the fork"
    assert set(two["timings"]) >= {"start", "imports", "worker", "load_checks", "import_attempt", "checks", "total"}
    status = _cli("warm", "status", env=learner_env).stdout
    assert "running" in status and "runs forked: 1" in status and "matches this checker" in status, status
    text = _cli("kata", "2", "--solution", "--verbose", *(f"--check={c}" for c in ONE_CHECK), env=learner_env).stdout
    assert "(forked by the warm server)" in text and "run checks" in text, text[-600:]

    old = server_status()["pid"]
    monkeypatch.setenv("PYTORCH_FX_KATAS_TEST_KNOB", "1")  # read when torch starts, as far as the server knows
    launcher = learner_launcher()
    pid = server_status()["pid"]
    assert pid != old and _gone(old), "the out-of-date server still runs"
    result = run_kata(KATA2, KATA2.solution_path, only=ONE_CHECK, launcher=launcher)
    assert (result.status, result.start) == ("pass", "warm")
    assert "stopped" in _cli("warm", "stop", env={**learner_env, "PYTORCH_FX_KATAS_TEST_KNOB": "1"}).stdout
    assert _gone(pid)
    assert "not running" in _cli("warm", "status", env=learner_env).stdout


def test_an_idle_server_ends_itself(learner_env, monkeypatch):
    monkeypatch.setenv("FX_KATAS_WARM_IDLE", "1")
    learner_launcher()
    status = server_status()
    assert _gone(status["pid"], within=15), "the server outlived its idle time"
    assert not list(Path(learner_env["FX_KATAS_WARM_DIR"]).glob("*.sock")), "its socket file stayed behind"


def test_a_server_started_by_attempt_code_is_never_used(learner_env, tmp_path):
    """An attempt's process (no_new_privs, as everything the worker starts) that puts a server at the socket
    could answer the learner's next runs with anything: the checker does not talk to it and starts its own."""
    path = str(socket_path())
    impostor = subprocess.Popen(
        [sys.executable, "-c", "import ctypes, os, sys; ctypes.CDLL(None).prctl(38, 1, 0, 0, 0); "
                               "os.execv(sys.executable, [sys.executable, '-m', 'checker.run.warm', 'serve', "
                               f"'--socket', {path!r}, '--ready-fd', '1'])"],
        cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, stdout=subprocess.PIPE,
        start_new_session=True)
    try:
        assert impostor.stdout.readline().strip() == b"ready"
        with pytest.raises(ConnectionRefusedError, match="started by an attempt"):
            from checker.run.warm import _connect_path

            _connect_path(Path(path))
        launcher = learner_launcher()
        assert server_status()["pid"] != impostor.pid
        result = run_kata(KATA2, KATA2.solution_path, only=ONE_CHECK, launcher=launcher)
        assert (result.status, result.start) == ("pass", "warm"), (result.message, [c.message for c in result.checks])
    finally:
        impostor.kill()
        impostor.wait()


def test_an_attempt_cannot_ask_the_server_for_a_run_of_its_own_making(learner_env, tmp_path):
    """tests/attacks/warm_launders_the_server.py asks the learner's running server, from inside the attempt, to
    fork a checks process loading checks it wrote. The server refuses (the attempt runs with no_new_privs), forks
    nothing, and the next run of another kata's pristine stub still scores not_started."""
    learner_launcher()  # the learner's server, listening
    pid = server_status()["pid"]
    marker = tmp_path / "marker"
    attack = REPO_ROOT / "tests" / "attacks" / "warm_launders_the_server.py"
    env = {**learner_env, "KATA_ATTACK_MARKER": str(marker), "KATA_ATTACK_WARM_DIR": learner_env["FX_KATAS_WARM_DIR"]}
    _cli("kata", "3", "--attempt", str(attack), "--json", "--check=module_graphs_fuse", env=env)
    reply = Path(str(marker) + ".reply").read_text()
    assert "refused" in reply and "attempt" in reply, reply
    assert not marker.exists(), "the server ran checks an attempt wrote"
    assert server_status()["pid"] == pid
    stub = json.loads(_cli("kata", "3", "--attempt", str(get_kata(3).stub_path), "--json", env=learner_env).stdout)
    assert stub["status"] == "not_started"


def test_the_server_runs_only_its_own_repositorys_checks(learner_env, tmp_path):
    """A request from the learner's own tools that names checks outside this repository is refused too."""
    from checker.run.warm import _connect_path, _recv_frame, _send_request

    launcher = learner_launcher()
    forged = tmp_path / "checks.py"
    forged.write_text("raise SystemExit('forged checks ran')\n")
    read_fd, write_fd = os.pipe()
    with _connect_path(socket_path()) as conn:
        _send_request(conn, {"op": "run", "program": "checks", "env": {}, "cwd": str(tmp_path),
                             "fingerprint": launcher.fingerprint, "argv": ["--checks", str(forged)]},
                      (write_fd, write_fd))
        reply = _recv_frame(conn)
    os.close(read_fd)
    os.close(write_fd)
    assert "not a file of this repository" in reply.get("refused", ""), reply


def test_a_private_server_ends_with_its_owner_and_a_dead_one_means_a_cold_start(monkeypatch):
    monkeypatch.setenv("FX_KATAS_WARM", "1")
    server = PrivateServer().start()
    launcher = server.launcher()
    assert launcher is not None, server.problem
    warm = run_kata(KATA2, KATA2.solution_path, only=ONE_CHECK, launcher=launcher)
    server.proc.kill()
    server.proc.wait()
    cold = run_kata(KATA2, KATA2.solution_path, only=ONE_CHECK, launcher=launcher)
    assert (warm.status, warm.start, cold.status, cold.start) == ("pass", "warm", "pass", "cold")
    with pytest.raises(WarmUnavailable):
        launcher.start([], {}, REPO_ROOT, 1, 2)
    server.close()
    other = PrivateServer().start()
    pid = other.proc.pid
    other.close()
    assert _gone(pid), "a private server outlived its owner's close()"


def test_time_limits_crashes_and_a_client_that_leaves_end_the_run_and_its_processes(warm_launcher, tmp_path):
    looping = run_kata(get_kata(1), ATTEMPTS_DIR / "infinite_loop.py", only=("graph_without_ops_is_torch",),
                       time_limit=4, launcher=warm_launcher)
    assert (looping.status, looping.start) == ("timeout", "warm"), looping.message
    crashed = run_kata(get_kata(1), ATTEMPTS_DIR / "segfault.py", only=("graph_without_ops_is_torch",),
                       launcher=warm_launcher)
    assert crashed.status == "error" and "SIGSEGV" in crashed.message, crashed.message
    # Ctrl-C in the learner's terminal: the client's connection closes, and the server ends the run it asked for
    read_fd, write_fd = os.pipe()
    with open(tmp_path / "output.txt", "wb") as output:
        child = warm_launcher.start(
            ["--checks", str(get_kata(1).checks_path), "--attempt", str(ATTEMPTS_DIR / "infinite_loop.py"),
             "--reference", str(get_kata(1).solution_path), "--module-name", "dialects", "--seed", "0"],
            dict(os.environ), tmp_path, output.fileno(), write_fd)
    os.close(write_fd)
    time.sleep(1.0)
    assert _alive(child.pid)
    child.conn.shutdown(socket.SHUT_RDWR)
    child.conn.close()
    assert _gone(child.pid), "the run outlived the client that asked for it"
    os.close(read_fd)


def test_a_sample_forked_by_the_server_shows_what_a_cold_one_shows_and_keeps_its_time_limit(warm_launcher):
    """`make diff` / `make graph` ask the server to fork their sample process (program "sample")."""
    from checker.learner.diffing import run_sample

    mutant = REPO_ROOT / "tests" / "mutants" / "03_fusion_guard" / "no_guard_rewires_all_readers.py"
    assert run_sample(get_kata(3), mutant, launcher=warm_launcher) == run_sample(get_kata(3), mutant)
    looping = run_sample(get_kata(1), ATTEMPTS_DIR / "infinite_loop.py", time_limit=3, launcher=warm_launcher)
    assert looping == "the sample did not finish within 3 s (a loop that never ends in your code?)", looping
    read_fd, write_fd = os.pipe()
    try:
        # a launcher of its own: a refused start marks its launcher broken, and the session's must stay warm
        launcher = WarmLauncher(warm_launcher._connect, warm_launcher.fingerprint, "the session's private server")
        with pytest.raises(WarmUnavailable, match="unknown program 'shell'"):
            launcher.start([], {}, REPO_ROOT, write_fd, write_fd, program="shell")
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_a_forked_run_is_as_nice_as_its_client(warm_launcher, monkeypatch, tmp_path):
    """`nice make kata` stays nice when the warm server forks the run: the server runs at the niceness of whoever
    started it, and the checks (and the attempt's worker) would otherwise compete at that priority."""
    import checker.run.warm as warm

    nicer = min(os.getpriority(os.PRIO_PROCESS, 0) + 5, 19)
    monkeypatch.setattr(warm, "client_niceness", lambda: nicer)
    attempt = tmp_path / "tells_its_niceness.py"
    attempt.write_text("import os\n\n\ndef node_dialect(node):\n"
                       "    raise RuntimeError(f'niceness {os.getpriority(os.PRIO_PROCESS, 0)}')\n\n\n"
                       "detect_dialect = node_dialect\n")
    result = run_kata(get_kata(1), attempt, only=("call_module_node_is_module",), launcher=warm_launcher)
    assert result.start == "warm"
    assert f"niceness {nicer}" in result.checks[0].message, result.checks[0].message
