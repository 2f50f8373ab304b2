"""Run one kata's checks against one attempt file in a child process and collect a KataResult.

The child (checker/trusted/checks_process.py, the trusted checks process) runs under the kata's time limit in its own
process group, with the attempt in a worker process of its own, so an infinite loop, a segfault or an early
exit in the attempt ends only the worker or the run; checks that finished keep their verdicts. Results come
back on a pipe the worker never holds.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, TypeVar

from checker import REQUIRED_TORCH, RESULTS_SCHEMA_VERSION
from checker.core.cpu_time import can_measure, tree_cpu_seconds
from checker.core.manifest import REPO_ROOT, Kata
from checker.core.processes import child_env, harden_trusted_process
from checker.kit import DEFAULT_SEED

if TYPE_CHECKING:
    from checker.attempt.sandbox import Sandbox
    from checker.run.warm import WarmChild, WarmLauncher

T = TypeVar("T")

WALL_FACTOR = 3  # a run this many times its CPU-second limit in wall-clock seconds is stopped all the same
# CPU seconds a checks process may spend before its checks begin, on top of the time limit: importing torch,
# Dynamo and the kata's code in the checks process and again in the attempt's worker (about 9 s in all under
# bubblewrap on a slow machine), and the attempt's own import. The time limit counts from the "ready" event, so
# the checker's start-up, which the learner cannot change, does not eat into the attempt's time.
STARTUP_CPU_SECONDS = 30.0
POLL_SECONDS = 0.25  # how often a running checks process's CPU time is read


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
    seconds: float = 0.0


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
    # where the run's time went, in seconds per phase (the slowest shard's; see PHASES), and how it started
    timings: dict = field(default_factory=dict)
    start: str = "cold"  # cold: a new interpreter per shard | warm: forked by a warm server (checker/run/warm.py)

    def to_json(self, verbose: bool = False) -> dict:
        data = asdict(self)
        keep = {"id", "stage", "name", "status", "weight", "message"} | ({"detail", "output", "fuzz", "seconds"} if verbose else set())
        data["checks"] = [{k: v for k, v in c.items() if k in keep} for c in data["checks"]]
        if not verbose:
            for key in ("detail", "output", "timings", "start"):
                data.pop(key)
        return data


# The phases of a run, in order, as --verbose and `make bench` show them. "start" is from asking for the checks
# process until its code runs (a new interpreter, or a fork of the warm server); "imports" is torch and the
# channel (nothing when warm); "worker" starts the attempt's process; the loads import the kata's checks, the
# reference and (in the worker) the attempt; "checks" runs them.
PHASES = ("start", "imports", "worker", "load_checks", "load_reference", "import_attempt", "checks")


def _parse_events(lines: list[str]) -> list[dict]:
    events = []
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


class _EventReader(threading.Thread):
    """Drains one child's results pipe while it runs (a pipe that fills up would stall the child), handing each
    event to `on_event` as it arrives when one is given (a live report: checker/run/live.py)."""

    def __init__(self, fd: int, on_event: "Callable[[dict], None] | None" = None, pid: int | None = None) -> None:
        super().__init__(daemon=True, name="fx-katas-events")
        self.fd = fd
        self.lines: list[str] = []
        self.on_event = on_event
        self.pid = pid  # the checks process, whose CPU seconds are read when it says it is ready
        # CPU seconds and monotonic time when the checks process said "ready" (the attempt imported, its checks
        # about to begin): the time limit counts from here (STARTUP_CPU_SECONDS)
        self.ready_cpu: float | None = None
        self.ready_at: float | None = None

    def run(self) -> None:
        with os.fdopen(self.fd, "r", encoding="utf-8", errors="replace") as pipe:
            for line in pipe:
                self.lines.append(line)
                for event in _parse_events([line]):
                    if event.get("event") == "ready" and self.ready_at is None:
                        self.ready_cpu = tree_cpu_seconds(self.pid) if self.pid is not None else 0.0
                        self.ready_at = time.monotonic()
                    if self.on_event is None:
                        continue
                    try:
                        self.on_event(event)
                    except Exception:  # noqa: BLE001 - a display that fails must not lose the verdict
                        self.on_event = None


# Children of run_kata calls still running, so that stop_running() can end them all (Ctrl-C in run_many) and
# _kill_orphans() can tell them from what an attempt left behind. A child is spawned and registered under
# the lock, so no thread's fresh child is ever taken for an orphan.
_RUNNING: set[subprocess.Popen] = set()
_SPAWN_LOCK = threading.Lock()


def _kill_group(proc: "subprocess.Popen | WarmChild") -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=None if isinstance(proc, subprocess.Popen) else 10.0)
    except subprocess.TimeoutExpired:  # a warm server that stopped answering: the run is over all the same
        pass


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"the process running your code was killed by {name}"
    return f"the process running your code exited with code {returncode} before the checks finished (sys.exit or os._exit?)"


@dataclass
class _Shard:
    """One child process running its share of the checks (shards claim checks one by one; see child.py)."""

    proc: "subprocess.Popen | WarmChild"
    reader: _EventReader
    output_path: Path
    asked_at: float = 0.0  # time.time() when the checks process was asked for
    timed_out: bool = False
    cpu_seconds: float = 0.0  # what it and its processes had spent when last measured (checker/core/cpu_time.py)
    charged_seconds: float = 0.0  # of those, what counts against the time limit (after "ready"; see _over_limit)
    wall_limit: float = 0.0  # the wall-clock seconds it was last allowed (_over_limit)
    events: list = field(default_factory=list)
    output: str = ""
    running: str | None = None  # the check it was running when it stopped, if it stopped early

    @property
    def warm(self) -> bool:
        """Forked by a warm server (a WarmChild), not started as a new interpreter."""
        return not isinstance(self.proc, subprocess.Popen)

    @property
    def finished(self) -> bool:
        return any(e.get("event") == "done" for e in self.events)


def start_child(program: str, argv: list[str], env: dict[str, str], cwd: Path, output, results_fd: int,
                launcher: "WarmLauncher | None") -> "subprocess.Popen | WarmChild":
    """Start `python -m <module> ARGV --results-fd FD` for `program` (checker.run.warm.PROGRAMS: "checks" or "sample"),
    writing to the open file `output`: forked by the warm server when `launcher` is given and it answers, else a
    new interpreter. The two are the same process once running."""
    from checker.run.warm import PROGRAMS, WarmUnavailable

    if launcher is not None:
        try:
            return launcher.start(argv, env, cwd, output.fileno(), results_fd, program=program)
        except WarmUnavailable:
            pass
    return subprocess.Popen([sys.executable, "-m", PROGRAMS[program], *argv, "--results-fd", str(results_fd)],
                            cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                            start_new_session=True, pass_fds=(results_fd,))


def _spawn(kata: Kata, attempt: Path, tmp: Path, index: int, count: int, *, seed: int, only: tuple[str, ...],
           profile: str | None, hidden_root: Path | None, launcher: "WarmLauncher | None",
           sandbox: "Sandbox | None" = None, examples: Path | None = None, first: tuple[str, ...] = (),
           on_event: "Callable[[dict], None] | None" = None, check_time_limit: float | None = None) -> _Shard:
    """Start one checks process (`start_child`); it starts the attempt's worker inside `sandbox`, if given."""
    output_path = tmp / f"output-{index}.txt"
    read_fd, write_fd = os.pipe()
    env = child_env()
    if profile:
        env["FX_KATAS_PROFILE"] = profile
    checks, reference = kata.checks_path, kata.solution_path
    if hidden_root is not None:  # a snapshot taken before any attempt ran (checker grade)
        checks = hidden_root / checks.relative_to(REPO_ROOT)
        reference = hidden_root / reference.relative_to(REPO_ROOT)
        env["FX_KATAS_SOLUTIONS_DIR"] = str(hidden_root / "solutions")
    if examples is not None:
        from checker.kit import EXAMPLES_ENV

        examples.mkdir(parents=True, exist_ok=True)
        env[EXAMPLES_ENV] = str(examples)
    if sandbox is not None:
        from checker.attempt.sandbox import ENV_VAR

        env[ENV_VAR] = sandbox.to_env()
        if sandbox.exchange:  # what the checks make for the attempt to write into, both can reach; torch's own
            env["TMPDIR"] = sandbox.exchange  # caches stay in this run's private folder, out of its reach
            env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp / "torch-cache")
    argv = [
        "--checks", str(checks), "--attempt", str(attempt),
        "--reference", str(reference), "--module-name", Path(kata.module).stem,
        "--seed", str(seed), "--only", ",".join(only), "--shard", f"{index}/{count}",
        "--claims", str(tmp / "claims"), "--first", ",".join(first),
        *(["--check-limit", str(check_time_limit)] if check_time_limit is not None else []),
    ]
    asked_at = time.time()
    try:
        with open(output_path, "wb") as output, _SPAWN_LOCK:
            proc = start_child("checks", argv, env, tmp, output, write_fd, launcher)
            _RUNNING.add(proc)
    finally:
        os.close(write_fd)
    reader = _EventReader(read_fd, on_event, pid=proc.pid)
    reader.start()
    return _Shard(proc, reader, output_path, asked_at=asked_at)


def _over_limit(shard: _Shard, limit: float, started: float) -> bool:
    """Whether `shard` has used up its time: `limit` CPU seconds (itself and every process it started,
    checker/core/cpu_time.py) since it said "ready", or STARTUP_CPU_SECONDS more before that; or WALL_FACTOR times
    as many wall-clock seconds. CPU seconds, not wall-clock ones, so that a busy machine does not turn a correct
    attempt into a timeout; the wall-clock backstop stops an attempt that waits instead of computing. Without
    /proc (macOS) the limit is wall time."""
    shard.cpu_seconds = tree_cpu_seconds(shard.proc.pid)
    factor = WALL_FACTOR if can_measure() else 1
    if shard.reader.ready_at is None:
        shard.charged_seconds = max(0.0, shard.cpu_seconds - STARTUP_CPU_SECONDS)
        wall, wall_limit = time.monotonic() - started, factor * (limit + STARTUP_CPU_SECONDS)
    else:
        shard.charged_seconds = max(0.0, shard.cpu_seconds - (shard.reader.ready_cpu or 0.0))
        wall, wall_limit = time.monotonic() - shard.reader.ready_at, factor * limit
    shard.wall_limit = wall_limit
    return shard.charged_seconds >= limit or wall >= wall_limit


def _wait_all(shards: list[_Shard], limit: float) -> None:
    """Wait for every shard until it finishes or uses up its time (_over_limit); end each in any case (Ctrl-C
    included)."""
    started = time.monotonic()
    running = list(shards)
    try:
        while running:
            for shard in list(running):
                if shard.proc.poll() is not None:
                    running.remove(shard)
                    continue
                if _over_limit(shard, limit, started):
                    shard.timed_out = True
                    running.remove(shard)
            if running:
                try:
                    running[0].proc.wait(timeout=POLL_SECONDS)
                except subprocess.TimeoutExpired:
                    pass
    finally:  # the children run in their own sessions, so nothing else would stop them
        for shard in shards:
            _end_child(shard.proc)
            _RUNNING.discard(shard.proc)
        _kill_orphans()


def _end_child(proc: subprocess.Popen) -> None:
    """Let a child that is still running end its worker and what that left behind (SIGTERM; it is their
    reaper), then kill its whole process group."""
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=1.0)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    _kill_group(proc)


def _kill_orphans() -> None:
    """Kill processes the attempt left behind that ended up as this process's children (it is their
    subreaper), sparing the checks children of runs still going on in other threads, the warm servers this
    process started, and the helpers it runs itself (`checker.trusted.check_list`): those share this process's session,
    while whatever a checks process or a worker started lives in the checks process's session or a new one."""
    from checker.core.processes import child_pids
    from checker.run.warm import STARTED_PIDS

    with _SPAWN_LOCK:
        known = {proc.pid for proc in _RUNNING} | STARTED_PIDS
        own_session = os.getsid(0)
        for pid in child_pids():
            if pid in known:
                continue
            try:
                if os.getsid(pid) == own_session:
                    continue
            except ProcessLookupError:
                continue
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def snapshot_hidden(into: Path) -> Path:
    """Copy `katas/` and `solutions/` into `into` and return it: runs given it as `hidden_root` read their
    checks and references from there, so an attempt graded earlier that wrote to the repository's files
    changes no later learner's result."""
    import shutil

    from checker.core.manifest import KATAS_DIR, SOLUTIONS_DIR

    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(KATAS_DIR, into / "katas", ignore=ignore)
    shutil.copytree(SOLUTIONS_DIR, into / "solutions", ignore=ignore)
    return into


def installed_torch_version() -> str | None:
    """The installed torch's version string, read from package metadata (importing torch takes a second)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return None


def interactive_shards() -> int:
    """How many processes one interactive `checker kata` run splits its checks over: the cores, at most two
    (past two, the extra torch start-up outweighs the gain on these check suites)."""
    return max(1, min(2, os.cpu_count() or 1))


def run_kata(
    kata: Kata,
    attempt: Path,
    *,
    seed: int = DEFAULT_SEED,
    only: tuple[str, ...] = (),
    time_limit: float | None = None,
    profile: str | None = None,
    shards: int = 1,
    hidden_root: Path | None = None,
    launcher: "WarmLauncher | None" = None,
    sandbox: "Sandbox | None" = None,
    examples: Path | None = None,
    first: tuple[str, ...] = (),
    on_event: "Callable[[dict], None] | None" = None,
    check_time_limit: float | None = None,
) -> KataResult:
    """Score `attempt` (a file with the kata module's API) against the kata's hidden checks.

    With `shards` > 1 the checks are split over that many child processes running at once (each imports
    torch and the attempt itself): a single interactive run then uses every core. Verdicts do not depend on
    the split. Callers that already run katas in parallel keep the default of one. `hidden_root`, when given,
    holds a copy of `katas/` and `solutions/` to read the checks and references from (see `snapshot_hidden`).
    `launcher`, when given, has a warm server fork the checks processes (checker/run/warm.py); a shard it cannot
    start starts cold. The verdicts are the same either way. `sandbox` (checker/attempt/sandbox.py, from `checker
    grade`) confines the attempt's worker. `examples`: a folder where each fuzz check keeps its failing examples
    and tries them first next time (the learner's own file only; checker.kit.checks.example_database). `first`: check
    ids to run before the others, in that order (the report still lists checks in kata order). `on_event` is
    called with each event of every checks process as it arrives ("plan", "start", "result", ...; from reader
    threads, so it must be thread-safe): what a live report shows while the run goes on. `check_time_limit`:
    CPU seconds any one check's attempt code may take before that check is stopped with the line it was on and
    the run goes on (default: each check's own, from the kata's mutation report; checker/trusted/checks_process.py).
    """
    torch_version = installed_torch_version() or "not installed"
    attempt = Path(attempt).resolve()
    started = time.monotonic()
    limit = time_limit or kata.time_limit
    count = max(1, shards if len(only) != 1 else 1)
    harden_trusted_process()  # this process reads the results
    with tempfile.TemporaryDirectory(prefix="fx-katas-") as tmp:
        (Path(tmp) / "claims").mkdir()
        children = []
        try:
            for index in range(count):
                children.append(_spawn(kata, attempt, Path(tmp), index, count, seed=seed, only=only,
                                       profile=profile, hidden_root=hidden_root, launcher=launcher,
                                       sandbox=sandbox, examples=examples, first=first,
                                       on_event=on_event if index == 0 else _without_plan(on_event),
                                       check_time_limit=check_time_limit))
        finally:
            _wait_all(children, limit)
        for shard in children:
            shard.reader.join(timeout=5)
            shard.events = _parse_events(shard.reader.lines)
            shard.output = _tail(shard.output_path)
    duration = time.monotonic() - started
    results = _planned_checks(kata, children[0].events)
    result = KataResult(kata.number, kata.title, "fail", 0, sum(r.weight for r in results.values()),
                        list(results.values()), str(attempt), torch_version, round(duration, 2),
                        output="".join(shard.output for shard in children)[-4000:], seed=seed,
                        start="warm" if all(shard.warm for shard in children) else "cold")
    for shard in children:
        _apply_events(result, results, shard)
    _settle_status(result, children, limit)
    result.timings = _timings(children, duration)
    return result


def _without_plan(on_event: "Callable[[dict], None] | None") -> "Callable[[dict], None] | None":
    """Every shard announces the same plan: a live report hears it from the first one only."""
    if on_event is None:
        return None
    return lambda event: None if event.get("event") == "plan" else on_event(event)


def _timings(shards: list[_Shard], duration: float) -> dict[str, float]:
    """Seconds per phase (PHASES), each the slowest shard's, and the whole run's ("total")."""
    timings: dict[str, float] = {}
    for shard in shards:
        phases = {e["phase"]: float(e["seconds"]) for e in shard.events if e.get("event") == "phase"}
        started = next((e["wall"] for e in shard.events if e.get("event") == "started"), None)
        if started is not None:
            phases["start"] = max(0.0, float(started) - shard.asked_at)
        for phase, seconds in phases.items():
            timings[phase] = round(max(timings.get(phase, 0.0), seconds), 3)
    ordered = {phase: timings[phase] for phase in PHASES if phase in timings}
    ordered["total"] = round(duration, 3)
    return ordered


def _tail(path: Path, size: int = 4000) -> str:
    """The end of a child's own output file (never read whole: an attempt could have flooded it)."""
    with open(path, "rb") as output:
        output.seek(0, os.SEEK_END)
        output.seek(max(0, output.tell() - size))
        return output.read().decode("utf-8", errors="replace")


def _planned_checks(kata: Kata, events: list[dict]) -> dict[str, CheckResult]:
    """Every check the child announced, in kata order, all `not_run` until a result event arrives."""
    plan = next((e["checks"] for e in events if e.get("event") == "plan"), [])
    unknown = {stage for _, stage, _, _ in plan} - set(kata.stages)
    if unknown:
        raise RuntimeError(f"{kata.checks_path}: stages {sorted(unknown)} are not listed for kata {kata.number} in katas.toml")
    return {sid: CheckResult(sid, stage, name, "not_run", weight) for sid, stage, name, weight in plan}


def _apply_events(result: KataResult, results: dict[str, CheckResult], shard: _Shard) -> None:
    running = None
    for event in shard.events:
        kind = event.get("event")
        if kind == "start":
            running = results.get(event["id"])
        elif kind == "result" and event["id"] in results:
            check = results[event["id"]]
            check.status, check.message = event["status"], event["message"]
            check.detail, check.output = event.get("detail", ""), event.get("output", "")
            check.fuzz, check.seconds = event.get("fuzz", []), event.get("seconds", 0.0)
            running = None
        elif kind == "import_error" and not result.message:
            line = f":{event['line']}" if event.get("line") else ""
            result.message = f"{event['file']}{line}: {event['message']}"
            result.detail = event.get("detail", "")
        elif kind == "crash" and not result.message:  # the worker died or ran out of memory in a check
            check = results.get(event.get("id", ""))
            result.message = str(event.get("message", "")) + (f" during check '{check.name}'" if check else "")
    shard.running = running.id if running else None


def _importing_attempt(shard: _Shard) -> bool:
    """The shard's worker was importing the attempt when it stopped: the reference had loaded, "ready" not come."""
    phases = {e.get("phase") for e in shard.events if e.get("event") == "phase"}
    return "load_reference" in phases and shard.reader.ready_at is None


def _settle_status(result: KataResult, shards: list[_Shard], limit: float) -> None:
    by_id = {c.id: c for c in result.checks}
    result.score = sum(c.weight for c in result.checks if c.status == "pass")
    timed_out = [s for s in shards if s.timed_out and not s.finished]
    crashed = [s for s in shards if not s.finished and not s.timed_out]
    if result.message:  # import error, or the attempt's process crashed in a check
        result.status = "error"
    elif timed_out:
        result.status = "timeout"
        running = [by_id[s.running] for s in timed_out if s.running in by_id]
        where = f" while running check '{running[0].name}'" if running else ""
        if not running and any(_importing_attempt(s) for s in timed_out):
            where = " while your file was being imported (its top-level code)"
        if any(s.charged_seconds >= limit for s in timed_out):
            result.message = (f"the checks did not finish within {limit:g} s of computing time{where}: look for "
                              f"an infinite loop or a very slow step")
            stopped = f"still running after {limit:g} s of computing time (the time limit)"
        elif not can_measure():  # no CPU clock here: the limit was wall time
            result.message = (f"the checks did not finish within {limit:g} s{where}: look for an infinite loop, "
                              f"code that waits, or a very slow step")
            stopped = f"still running after the {limit:g} s time limit"
        else:
            spent = max(s.charged_seconds for s in timed_out)
            waited = max(s.wall_limit for s in timed_out)
            result.message = (f"the checks ran {waited:g} s without finishing{where}, and computed "
                              f"for only {spent:.0f} s of them: the attempt waits (input(), time.sleep, a lock or "
                              f"queue nothing releases), or other work kept this machine busy (then run it again)")
            stopped = f"still waiting after {waited:g} s"
        for check in running:
            check.status, check.message = "timeout", stopped
    elif crashed:
        result.status = "error"
        shard = crashed[0]
        running = by_id.get(shard.running)
        where = f" during check '{running.name}'" if running else ""
        result.message = _describe_exit(shard.proc.returncode) + where
        if running:
            running.status, running.message = "error", result.message
        if not shard.events:
            result.message += f"\n{shard.output.strip()[-1500:]}"
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
    installed = installed_torch_version()
    if installed is None:
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
