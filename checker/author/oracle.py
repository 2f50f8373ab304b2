"""The mutation oracle: a warm process that forks one child per mutant and runs a kata's checks on it.

Spawning `python -m checker kata` per mutant would pay 3-4 s of start-up (import torch, first Dynamo
compile) every time. Here the parent pays it once: it imports torch, Hypothesis, katas.common and the kata's
checks, warms Dynamo, make_fx and export on a tiny model, then `os.fork()`s. Each child inherits all of that,
loads the mutant as the attempt and the reference as `ctx.reference` exactly as checker/trusted/checks_process.py
does, and runs the checks with its own `run_checks` (the same output capture, warnings filter and verdicts).
A fork also isolates every mutant: whatever it registers or breaks dies with its child.

The verdict of a check is the checker's: a mutant is killed when a check does not pass (fail, error,
not_implemented), when it cannot be imported, when its child dies, or when it runs out of time.
"""
from __future__ import annotations

import builtins
import io
import json
import os
import selectors
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings
from contextlib import redirect_stdout
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from checker.core.cpu_time import process_cpu_seconds
from checker.core.manifest import REPO_ROOT, Kata
from checker.kit import DEFAULT_SEED

MAX_MESSAGE_CHARS = 1500
POLL_SECONDS = 0.25
WALL_FACTOR = 10  # a child this many times its CPU limit in wall-clock time without finishing is stuck


@dataclass(frozen=True)
class Target:
    """What the oracle runs: one kata's checks and reference solution (or a test fixture laid out alike)."""

    name: str
    checks_path: Path
    solution_path: Path

    @classmethod
    def of(cls, kata: Kata) -> "Target":
        return cls(f"kata {kata.number}", kata.checks_path, kata.solution_path)

    @property
    def module_name(self) -> str:
        return self.solution_path.stem


@dataclass(frozen=True)
class Job:
    """One attempt to score: mutated `source` (written to a private file named like the solution), or the
    file at `path` loaded where it is (the reference, a hand-written mutant)."""

    key: str
    source: str | None = None
    path: Path | None = None
    profile: str = "learner"
    stop_at_first: bool = True  # stop at the first check that does not pass (enough to call it killed)
    shrink: bool = False  # let fuzz checks shrink their counterexample (for a person reading the message)
    detail: bool = False  # send back each failing check's message and traceback, not just the first


@dataclass
class CheckRun:
    id: str
    status: str
    seconds: float  # CPU seconds
    message: str = ""
    detail: str = ""


@dataclass
class Verdict:
    key: str
    outcome: str  # survived | killed | timeout | crashed
    check: str = ""  # the check that killed it ("" for an import error, a timeout or a crash)
    status: str = ""  # that check's status, or import_error
    message: str = ""
    checks: list[CheckRun] = field(default_factory=list)  # every check run, in order
    seconds: float = 0.0  # wall-clock
    cpu: float = 0.0  # CPU seconds the child used
    files: list[str] = field(default_factory=list)  # repository files the child had imported (kata's own)

    @property
    def killed(self) -> bool:
        return self.outcome != "survived"

    @property
    def failing(self) -> list[str]:
        return [c.id for c in self.checks if c.status != "pass"]


def _torch_backends() -> frozenset[str]:
    """The torch.compile backend names torch itself registers (all of them: listing imports the lazy ones)."""
    import torch._dynamo

    torch._dynamo.list_backends(exclude_tags=())
    from torch._dynamo.backends import registry

    return frozenset(registry._COMPILER_FNS)  # noqa: SLF001 - the registry has no public listing of functions


def _forget_backends_but(kept: frozenset[str]) -> None:
    """Forget every torch.compile backend name but `kept`. A worker imports the attempt in a process where only
    torch's own backends are registered; here the checks and the reference loaded first, and a name they took
    (kata 5's "kata_npu") would meet an attempt that keeps a taken name with the reference's function."""
    from torch._dynamo.backends import registry

    for name in set(registry._COMPILER_FNS) - kept:  # noqa: SLF001 - no public way to forget a name
        registry._COMPILER_FNS.pop(name, None)  # noqa: SLF001
        registry._BACKENDS.pop(name, None)  # noqa: SLF001


class _Collector:
    """Stands in for checker.trusted.checks_process's event file: keeps the events of the checks run in this process."""

    def __init__(self) -> None:
        self.results: list[dict] = []

    def emit(self, **event: object) -> None:
        if event.get("event") == "result":
            self.results.append(event)


def _repo_files() -> list[str]:
    """The repository's Python files the process has imported, but for the checker and katas.common:
    what a kata's verdicts depend on beyond the shared code (checks, hidden helpers, references)."""
    found = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path:
            continue
        try:
            relative = Path(path).resolve().relative_to(REPO_ROOT)
        except ValueError:
            continue
        # katas/NN_slug/... and solutions/NN_slug/...: not katas/common, not the packages' __init__.py
        if len(relative.parts) >= 3 and relative.parts[0] in ("katas", "solutions") and relative.parts[1] != "common":
            found.add(relative.as_posix())
    return sorted(found)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0]


class Oracle:
    """A warm parent for one target. `run()` forks up to `workers` children at a time, one per job."""

    def __init__(self, target: Target, *, seed: int = DEFAULT_SEED, warm: bool = True) -> None:
        from checker.core.modules import load_module
        from checker.trusted.checks_process import warm_up

        os.environ.setdefault("OMP_NUM_THREADS", "1")
        sys.dont_write_bytecode = True  # nothing in the repository changes: no __pycache__ beside a solution
        self.target = target
        self.seed = seed
        if warm:
            warm_up()
        self._torch_backends = _torch_backends()  # before the checks and references register any of their own
        with redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.checks_module = load_module(target.checks_path, "kata_hidden_checks")
        self.specs = {spec.id: spec for spec in self.checks_module.CHECKS.specs}
        self.check_ids = tuple(self.specs)
        self._workdir = Path(tempfile.mkdtemp(prefix="fx-katas-mutate-"))
        self._count = 0

    def close(self) -> None:
        shutil.rmtree(self._workdir, ignore_errors=True)

    def __enter__(self) -> "Oracle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the parent --------------------------------------------------------------------------------------

    def run(self, jobs: Iterable[Job], *, workers: int = 1, time_limit: float = 60.0,
            order: Callable[[Job], list[str]] | None = None) -> Iterator[Verdict]:
        """Yield a Verdict per job as children finish. `order(job)` gives the check ids to run, in order,
        and is asked just before the job's child starts (so it can learn from the verdicts so far).

        `time_limit` is CPU seconds, not wall-clock ones: on a machine that other work keeps busy a child
        gets a share of a core, and a wall-clock limit would call slow-but-correct mutants killed. A child still
        running after WALL_FACTOR times the limit in wall-clock seconds is stopped as well (a deadlock uses no CPU).
        """
        pending = list(jobs)[::-1]
        running: dict[int, _Child] = {}  # by read fd
        selector = selectors.DefaultSelector()
        try:
            while pending or running:
                while pending and len(running) < max(1, workers):
                    job = pending.pop()
                    checks = order(job) if order else list(self.check_ids)
                    child = self._fork(job, checks)
                    running[child.fd] = child
                    selector.register(child.fd, selectors.EVENT_READ)
                for key, _ in selector.select(timeout=POLL_SECONDS):
                    child = running[key.fd]
                    chunk = os.read(key.fd, 1 << 16)
                    if chunk:
                        child.data.extend(chunk)
                        continue
                    selector.unregister(key.fd)
                    os.close(key.fd)
                    running.pop(key.fd)
                    _, status = os.waitpid(child.pid, 0)
                    yield self._verdict(child.job, child.data, status, time.monotonic() - child.started)
                for fd, child in list(running.items()):
                    cpu, wall = process_cpu_seconds(child.pid), time.monotonic() - child.started
                    if cpu < time_limit and wall < WALL_FACTOR * time_limit:
                        continue
                    selector.unregister(fd)
                    os.close(fd)
                    running.pop(fd)
                    _kill(child.pid)
                    what = f"{cpu:.0f} s of CPU" if cpu >= time_limit else f"{wall:.0f} s without finishing"
                    yield Verdict(child.job.key, "timeout", status="timeout", seconds=round(wall, 2),
                                  message=f"stopped after {what} (limit: {time_limit:g} CPU seconds)")
        finally:
            for fd, child in running.items():
                _kill(child.pid)
                os.close(fd)
            selector.close()

    def _fork(self, job: Job, checks: list[str]) -> "_Child":
        self._count += 1
        workdir = self._workdir / str(self._count)
        workdir.mkdir()
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_fd)
            code = 0
            try:
                os.setpgid(0, 0)
                result = self._child(job, checks, workdir)
            except BaseException as exc:  # noqa: BLE001 - report anything, then leave
                result = {"outcome": "crashed", "message": f"the oracle's child failed: {type(exc).__name__}: "
                                                           f"{_first_line(exc)}", "detail": traceback.format_exc()}
                code = 1
            result.setdefault("cpu", round(time.process_time(), 2))
            try:
                with os.fdopen(write_fd, "w", encoding="utf-8") as pipe:
                    pipe.write(json.dumps(result))
            finally:
                os._exit(code)
        os.close(write_fd)
        try:
            os.setpgid(pid, pid)  # also done by the child: whichever runs first, the group exists before a kill
        except (PermissionError, ProcessLookupError):
            pass
        return _Child(read_fd, pid, job, time.monotonic())

    def _verdict(self, job: Job, data: bytes, status: int, seconds: float) -> Verdict:
        try:
            result = json.loads(data.decode("utf-8", errors="replace"))
        except json.JSONDecodeError:
            signalled = os.WIFSIGNALED(status)
            how = (f"killed by {signal.Signals(os.WTERMSIG(status)).name}" if signalled
                   else f"exited with code {os.WEXITSTATUS(status)}")
            return Verdict(job.key, "crashed", status="crash", seconds=round(seconds, 2),
                           message=f"the process running the mutant {how} before reporting (os._exit, a segfault?)")
        checks = [CheckRun(**c) for c in result.pop("checks", [])]
        result.pop("detail", None)
        return Verdict(job.key, checks=checks, seconds=round(seconds, 2), **result)

    # --- the child ---------------------------------------------------------------------------------------

    def _child(self, job: Job, checks: list[str], workdir: Path) -> dict:
        """Load the attempt and the reference, run `checks` in order; the result as plain data."""
        from checker.kit import Context
        import checker.kit.checks
        from checker.trusted.checks_process import attempt_location, load_module, run_checks

        warnings.simplefilter("ignore")
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # torch or the attempt may write to the file descriptors themselves
        os.dup2(devnull, 2)
        os.chdir(workdir)
        if not job.shrink:
            checker.kit.checks.SHRINK_BUDGET_S = 0.0  # a failing example is a kill; its smallest form is for people
        from cosmic_ray.exceptions import CosmicRayTestingException

        # cosmic-ray's ExceptionReplacer writes `except CosmicRayTestingException:`, a handler nothing raises
        builtins.CosmicRayTestingException = CosmicRayTestingException  # type: ignore[attr-defined]
        if job.source is not None:
            attempt_path = workdir / self.target.solution_path.name
            attempt_path.write_text(job.source, encoding="utf-8")
        else:
            attempt_path = Path(job.path).resolve()
        sys.path.insert(0, str(attempt_path.parent))
        # As in checker/trusted/checks_process.py: the reference loads first, so the attempt is the last to register
        # anything at import (a torch.compile backend name), as it would be in a worker process of its own.
        reference = load_module(self.target.solution_path, f"reference_{self.target.module_name}")
        _forget_backends_but(self._torch_backends)
        try:
            with redirect_stdout(io.StringIO()):
                attempt = load_module(attempt_path, self.target.module_name)
        except BaseException as exc:  # noqa: BLE001 - as in the checks process: any import failure is the attempt's
            line, _ = attempt_location(exc, attempt_path)
            text = exc.msg if isinstance(exc, SyntaxError) else _first_line(exc)
            where = f"{attempt_path.name}:{line}: " if line else ""
            return {"outcome": "killed", "status": "import_error", "message": f"{where}{type(exc).__name__}: {text}"}
        ctx = Context(attempt=attempt, reference=reference, seed=self.seed, profile=job.profile)
        collector = _Collector()
        runs, killer = [], None
        for check_id in checks:
            cpu = time.process_time()
            run_checks([self.specs[check_id]], ctx, collector, attempt_path)
            event = collector.results[-1]
            run = CheckRun(check_id, event["status"], round(time.process_time() - cpu, 3))
            if run.status != "pass" and (killer is None or job.detail):
                run.message = event["message"][:MAX_MESSAGE_CHARS]
                run.detail = event["detail"][-4000:] if job.detail else ""
            runs.append(run)
            if run.status != "pass":
                killer = killer or run
                if job.stop_at_first:
                    break
        result = {"outcome": "killed" if killer else "survived", "checks": [asdict(r) for r in runs],
                  "files": _repo_files()}
        if killer:
            result.update(check=killer.id, status=killer.status, message=killer.message)
        return result


@dataclass
class _Child:
    fd: int
    pid: int
    job: Job
    started: float
    data: bytearray = field(default_factory=bytearray)


def _kill(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
            break
        except (ProcessLookupError, PermissionError):
            continue
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
