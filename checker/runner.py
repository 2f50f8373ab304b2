"""Run one kata's checks against one attempt file in a child process and collect a KataResult.

The child runs under the kata's time limit in its own process group, so an infinite loop, a segfault or
an early exit in the attempt ends only the child; checks it finished keep their verdicts.
"""
from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from checker import REQUIRED_TORCH, RESULTS_SCHEMA_VERSION
from checker.kit import DEFAULT_SEED
from checker.manifest import REPO_ROOT, Kata

STATUSES = ("pass", "fail", "not_started", "error", "timeout")
T = TypeVar("T")


@dataclass
class CheckResult:
    id: str
    stage: str
    name: str
    status: str  # pass | fail | error | not_implemented | timeout | not_run
    weight: int
    message: str = ""
    detail: str = ""
    output: str = ""
    fuzz: list = field(default_factory=list)  # Hypothesis runs: [{"examples", "seconds"}], for `make bench`


@dataclass
class KataResult:
    kata: int
    title: str
    status: str
    score: int
    max_score: int
    checks: list[CheckResult]
    attempt: str
    torch_version: str
    duration_s: float
    message: str = ""  # attempt-level problem (import error, crash, timeout), empty otherwise
    detail: str = ""
    output: str = ""
    seed: int = DEFAULT_SEED
    schema_version: int = RESULTS_SCHEMA_VERSION
    extra: dict = field(default_factory=dict)

    def to_json(self, verbose: bool = False) -> dict:
        data = asdict(self)
        keep = {"id", "stage", "name", "status", "weight", "message"} | ({"detail", "output", "fuzz"} if verbose else set())
        data["checks"] = [{k: v for k, v in c.items() if k in keep} for c in data["checks"]]
        if not verbose:
            data.pop("detail")
            data.pop("output")
        if not data["extra"]:
            data.pop("extra")
        return data


def _child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
    env["PYTHONWARNINGS"] = "ignore"
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # never leave __pycache__ beside a learner's file
    # Kata models are tiny: one intra-op thread is as fast, and parallel checkers do not oversubscribe the cores.
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update(extra or {})
    return env


def _read_events(path: Path, token: str) -> list[dict]:
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict) and event.pop("token", None) == token:
            events.append(event)
    return events


# Children of run_kata calls still running, so that stop_running() can end them all (Ctrl-C in run_many).
_RUNNING: set[subprocess.Popen] = set()


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"the process running your code was killed by {name}"
    return f"the process running your code exited with code {returncode} before the checks finished (sys.exit or os._exit?)"


def run_kata(
    kata: Kata,
    attempt: Path,
    *,
    seed: int = DEFAULT_SEED,
    only: tuple[str, ...] = (),
    time_limit: float | None = None,
    profile: str | None = None,
) -> KataResult:
    """Score `attempt` (a file with the kata module's API) against the kata's hidden checks."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        torch_version = version("torch")
    except PackageNotFoundError:
        torch_version = "not installed"
    attempt = Path(attempt).resolve()
    started = time.monotonic()
    token = secrets.token_hex(16)
    limit = time_limit or kata.time_limit
    with tempfile.TemporaryDirectory(prefix="fx-katas-") as tmp:
        events_path, output_path = Path(tmp) / "events.jsonl", Path(tmp) / "output.txt"
        events_path.touch()
        env = _child_env({"FX_KATAS_RESULTS": str(events_path), "FX_KATAS_TOKEN": token})
        if profile:
            env["FX_KATAS_PROFILE"] = profile
        cmd = [
            sys.executable, "-m", "checker.child", "--checks", str(kata.checks_path), "--attempt", str(attempt),
            "--reference", str(kata.solution_path), "--module-name", Path(kata.module).stem,
            "--seed", str(seed), "--only", ",".join(only),
        ]
        with open(output_path, "wb") as output:
            proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=output,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            _RUNNING.add(proc)
            timed_out = False
            try:
                proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:  # also on Ctrl-C: the child runs in its own session, so nothing else would stop it
                _kill_group(proc)
                _RUNNING.discard(proc)
        events = _read_events(events_path, token)
        child_output = output_path.read_text(encoding="utf-8", errors="replace")[-4000:]
    duration = time.monotonic() - started
    results = _planned_checks(kata, events)
    result = KataResult(kata.number, kata.title, "fail", 0, sum(r.weight for r in results.values()),
                        list(results.values()), str(attempt), torch_version, round(duration, 2),
                        output=child_output, seed=seed)
    _apply_events(result, results, events)
    _settle_status(result, events, timed_out, proc.returncode, limit)
    return result


def _planned_checks(kata: Kata, events: list[dict]) -> dict[str, CheckResult]:
    """The checks the child announced it would run, all `not_run` until a result event arrives."""
    plan = next((e["checks"] for e in events if e.get("event") == "plan"), [])
    unknown = {stage for _, stage, _, _ in plan} - set(kata.stages)
    if unknown:
        raise RuntimeError(f"{kata.checks_path}: stages {sorted(unknown)} are not listed for kata {kata.number} in katas.toml")
    return {sid: CheckResult(sid, stage, name, "not_run", weight) for sid, stage, name, weight in plan}


def _apply_events(result: KataResult, results: dict[str, CheckResult], events: list[dict]) -> None:
    running = None
    for event in events:
        kind = event.get("event")
        if kind == "start":
            running = results.get(event["id"])
        elif kind == "result" and event["id"] in results:
            check = results[event["id"]]
            check.status, check.message = event["status"], event["message"]
            check.detail, check.output = event.get("detail", ""), event.get("output", "")
            check.fuzz = event.get("fuzz", [])
            running = None
        elif kind == "import_error":
            line = f":{event['line']}" if event.get("line") else ""
            result.message = f"{event['file']}{line}: {event['message']}"
            result.detail = event.get("detail", "")
    result.extra["running"] = running.id if running else None


def _settle_status(result: KataResult, events: list[dict], timed_out: bool, returncode: int, limit: float) -> None:
    running_id = result.extra.pop("running")
    running = next((c for c in result.checks if c.id == running_id), None)
    finished = any(e.get("event") == "done" for e in events)
    result.score = sum(c.weight for c in result.checks if c.status == "pass")
    if result.message:  # import error
        result.status = "error"
    elif timed_out and not finished:
        result.status = "timeout"
        where = f" while running check '{running.name}'" if running else ""
        result.message = f"the checks did not finish within {limit:g} s{where}: look for an infinite loop or a very slow step"
        if running:
            running.status, running.message = "timeout", f"still running after the {limit:g} s time limit"
    elif not finished:
        result.status = "error"
        where = f" during check '{running.name}'" if running else ""
        result.message = _describe_exit(returncode) + where
        if running:
            running.status, running.message = "error", result.message
        if not events:
            result.message += f"\n{result.output.strip()[-1500:]}"
    elif not result.checks:
        result.status = "error"
        result.message = "the kata's checks did not load:\n" + result.output.strip()[-1500:]
    elif all(c.status == "not_implemented" for c in result.checks):
        result.status = "not_started"
    elif all(c.status == "pass" for c in result.checks):
        result.status = "pass"
    else:
        result.status = "fail"


def torch_version_problem() -> str | None:
    """A learner-facing message when the installed torch is not the one the katas were written for."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("torch")
    except PackageNotFoundError:
        return "torch is not installed in this environment: run `make kata N=1` (it creates .venv and installs it)"
    if installed.split("+")[0] != REQUIRED_TORCH:
        return (f"torch {installed} is installed, but the katas are written for torch {REQUIRED_TORCH}: graph shapes "
                f"(node names, decompositions, core tags) change between releases, so checks could mislead you. "
                f"Run inside the project's .venv (`make kata N=1`), or pass --any-torch to run anyway.")
    return None


def stop_running() -> None:
    """Kill every child a run_kata call (in any thread) is waiting for; those calls then return at once."""
    for proc in list(_RUNNING):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def run_many(jobs: list[Callable[[], T]], workers: int | None = None) -> Iterator[tuple[int, T | BaseException]]:
    """Run `jobs` (callables that usually call run_kata) in parallel threads, each waiting on its own child process.

    Yields (index, value or the exception it raised) as jobs finish. At most `workers` run at once (default: the
    number of CPU cores). On KeyboardInterrupt (or the caller closing the generator) every running child is killed
    and pending jobs are cancelled, so Ctrl-C leaves no process behind.
    """
    from concurrent.futures import ThreadPoolExecutor, as_completed

    workers = max(1, min(workers or os.cpu_count() or 1, len(jobs) or 1))
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fx-katas")
    futures = {pool.submit(job): index for index, job in enumerate(jobs)}
    finished = False
    try:
        for future in as_completed(futures):
            error = future.exception()
            yield futures[future], (error if error is not None else future.result())
        finished = True
    finally:
        if not finished:
            pool.shutdown(wait=False, cancel_futures=True)
            while not all(future.done() for future in futures):  # a job may start its child just after a kill
                stop_running()
                time.sleep(0.05)
        pool.shutdown(wait=True)
