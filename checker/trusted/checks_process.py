"""The trusted checks process (`python -m checker.trusted.checks_process ...`): runs a kata's hidden checks against
an attempt that runs in a worker process of its own (checker/trusted/stand_ins.py, checker/attempt/worker.py).

The checks, the reference, the results channel and everything the checks count live here; the attempt's code
never runs in this process. Results go out as one JSON event per line on a pipe the runner passed in
(`--results-fd`) and the worker never holds, so nothing the attempt prints, forges or exits with can pass
for a result. This process makes itself non-dumpable (no other process of the user can read its memory or
open its file descriptors through /proc) and the reaper of anything the worker leaves behind. The runner
owns the time limit.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import tempfile
import threading
import time
import traceback
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from checker.core.modules import load_module
from checker.core.processes import (exit_without_teardown, harden_trusted_process, kill_children,
                                     skip_guard_latency_probe)
from checker.kit import CheckSpec, Context, env_profile

if TYPE_CHECKING:
    from checker.trusted.stand_ins import Worker

MAX_OUTPUT_CHARS = 2000


MAX_WORKER_RESTARTS = 3  # a worker that dies is restarted for the next check, this many times per run
CLOCK_POLL_SECONDS = 0.25
MIN_CHECK_LIMIT = 10.0  # CPU seconds a check may always take, whatever it took on the reference
CHECK_LIMIT_FACTOR = 10.0  # times its time on the reference (hidden/mutation.toml) a check may take
DEEP_FACTOR = 4.0  # the deep profile tries many more random examples per fuzz check


class _Events:
    """One JSON object per line on the results pipe."""

    def __init__(self, fd: int) -> None:
        self._file = os.fdopen(fd, "w", encoding="utf-8")  # noqa: SIM115 - must stay open for the whole run

    def emit(self, **event: object) -> None:
        self._file.write(json.dumps(event) + "\n")
        self._file.flush()


class _PhaseClock:
    """Emits how long each phase of the run took (checker.run.runner.PHASES): calling it ends the current phase."""

    def __init__(self, events: _Events) -> None:
        self.events = events
        self.mark = time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.events.emit(event="phase", phase=name, seconds=round(now - self.mark, 3))
        self.mark = now


def attempt_location(exc: BaseException, attempt_path: Path) -> tuple[int | None, str]:
    """The innermost line of the attempt in `exc`'s traceback, as (line, function). For an exception raised in
    the worker, the worker found it in its own traceback."""
    from checker.trusted.stand_ins import RemoteError

    if isinstance(exc, RemoteError):
        return exc.attempt_line, exc.attempt_function
    found: tuple[int | None, str] = (None, "")
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).resolve() == attempt_path:
        return exc.lineno, ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == attempt_path:
            found = (frame.lineno, frame.name)
    return found


def _raised_by_attempt(exc: BaseException, attempt_path: Path) -> bool:
    return attempt_location(exc, attempt_path)[0] is not None


def _raised_in_attempt_itself(exc: BaseException, attempt_path: Path) -> bool:
    from checker.attempt.worker import raised_in_attempt

    return raised_in_attempt(exc, attempt_path)


def classify_exception(exc: BaseException, attempt_path: Path) -> tuple[str, str]:
    """Map an exception escaping a check to (check status, learner-facing message)."""
    from checker.channel.answers import ProtocolError, WorkerDied
    from checker.trusted.stand_ins import RemoteError, memory_limit_mb

    line, func = attempt_location(exc, attempt_path)
    where = f"{attempt_path.name}:{line}" + (f" in {func}()" if func else "") if line else ""
    remote = isinstance(exc, RemoteError)
    name = exc.remote_type if remote else type(exc).__name__
    if isinstance(exc, (WorkerDied, ProtocolError)):
        return "error", str(exc)
    if name == "MemoryError" or "can't allocate memory" in str(exc):
        return "error", (f"your code ran out of memory{' at ' + where if where else ''}: the process running it may "
                         f"use at most {memory_limit_mb()} MiB (FX_KATAS_MEMORY_LIMIT_MB sets the limit)")
    raised_here = exc.raised_in_attempt if remote else _raised_in_attempt_itself(exc, attempt_path)
    if isinstance(exc, NotImplementedError) and ((line and raised_here) or not str(exc)):
        return "not_implemented", f"not implemented yet ({where}): {exc}".replace(" (): ", ": ")
    if isinstance(exc, NotImplementedError) and where:  # raised by a library your code called: not a stub
        first_line = (str(exc).strip().splitlines() or [""])[0]
        return "error", (f"your code raised NotImplementedError at {where}: {first_line} (raised inside a library "
                         "call your code made, not by your code: something there is not supported)")
    if isinstance(exc, AssertionError) and not remote and not _raised_by_attempt(exc, attempt_path):
        return "fail", str(exc).strip() or "the check's assertion failed"
    if name == "SystemExit":
        return "error", f"your code called sys.exit({str(exc) or None}){' at ' + where if where else ''}; a pass or backend must return, not exit"
    first_line = (str(exc).strip().splitlines() or [""])[0]
    if where:
        return "error", f"your code raised {name} at {where}: {first_line}"
    if remote:
        return "error", f"your code raised {name}: {first_line}"
    return "error", f"{name}: {first_line}"


def _first(specs: list[CheckSpec], ids: list[str]) -> tuple[list[CheckSpec], list[CheckSpec]]:
    """The specs named by `ids`, in that order, and the others in kata order."""
    by_id = {spec.id: spec for spec in specs}
    chosen = [i for i in dict.fromkeys(ids) if i in by_id]
    return [by_id[i] for i in chosen], [spec for spec in specs if spec.id not in chosen]


def _claimed(specs: list[CheckSpec], claims: Path):
    """Yield the specs no other shard has claimed yet, claiming each (an exclusive file create) just before
    it runs, so the shards split the work by how long it really takes."""
    for spec in specs:
        try:
            os.close(os.open(claims / spec.id, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            continue
        yield spec


class CheckClock:
    """Stops one check whose attempt has computed for `limit` CPU seconds (the worker and what it started):
    notes where the attempt's code was (Worker.attempt_frame), then kills the worker, so that the check fails
    with that line and the next check runs on a fresh worker. The kata's own time limit (checker/run/runner.py)
    stays the backstop for everything else, waiting included."""

    def __init__(self, worker: "Worker", limit: float) -> None:
        from checker.core.cpu_time import tree_cpu_seconds

        self.worker, self.limit = worker, limit
        self._cpu = lambda: tree_cpu_seconds(worker.proc.pid)
        self._start = self._cpu()
        self.where: str | None = None
        self.fired = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="fx-katas-check-clock")
        self._thread.start()

    def _watch(self) -> None:
        while not self._done.wait(CLOCK_POLL_SECONDS):
            if not self.worker.alive():
                return
            if self._cpu() - self._start >= self.limit:
                self.where = self.worker.attempt_frame()
                self.fired = True
                self.worker.proc.kill()
                return

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def check_limits(checks_path: Path, profile: str) -> dict[str, float]:
    """Each check's own CPU-second limit: CHECK_LIMIT_FACTOR times what it took on the reference in the kata's
    mutation report (hidden/mutation.toml), at least MIN_CHECK_LIMIT, DEEP_FACTOR times more in the deep
    profile. A check the report does not know has none of its own (the kata's limit still applies)."""
    from checker.core.mutation_report import check_seconds

    scale = DEEP_FACTOR if profile == "deep" else 1.0
    return {check: scale * max(MIN_CHECK_LIMIT, CHECK_LIMIT_FACTOR * seconds)
            for check, seconds in check_seconds(checks_path.parent / "mutation.toml").items()}


def run_checks(specs: Iterable[CheckSpec], ctx: Context, events: _Events, attempt_path: Path,
               worker: "Worker | None" = None, limits: dict[str, float] | None = None) -> None:
    """Run each check, emitting start and result events. With a `worker`, the attempt's prints come from it,
    and a worker that dies during a check is restarted (a few times per run) for the next one. `limits`: a
    check's own CPU-second limit by id (CheckClock); a check past it times out and the next one runs."""
    from checker.channel.answers import ChannelBroken

    restarts = 0
    limits = limits or {}
    for spec in specs:
        events.emit(event="start", id=spec.id)
        ctx.fuzz_runs.clear()
        ctx.check_id = spec.id
        started = time.monotonic()
        captured = io.StringIO()
        if worker is not None:
            worker.outputs.clear()
            if not worker.alive():
                if restarts >= MAX_WORKER_RESTARTS:
                    events.emit(event="result", id=spec.id, status="error", seconds=0.0, fuzz=[], detail="", output="",
                                message="not run: the process running your code died too often in the checks before")
                    continue
                restarts += 1
                worker.restart()
        died = False
        clock = CheckClock(worker, limits[spec.id]) if worker is not None and spec.id in limits else None
        try:
            with redirect_stdout(captured), redirect_stderr(captured), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                spec.func(ctx)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - attempt code may raise anything, SystemExit included
            status, message = classify_exception(exc, attempt_path)
            detail = getattr(exc, "remote_traceback", "") or "".join(traceback.format_exception(exc))
            died = isinstance(exc, ChannelBroken)
            if clock is not None and clock.fired:
                restarts -= 1  # a check stopped on purpose is not a worker dying: it does not use up a restart
                if not getattr(exc, "found_before_stop", False):  # else: a failing example, found in time
                    status, message = "timeout", _stopped_message(clock)
            elif died or getattr(exc, "remote_type", "") == "MemoryError":
                events.emit(event="crash", id=spec.id, message=message)
        else:
            status, message, detail = "pass", "", ""
        finally:
            if clock is not None:
                clock.stop()
        output = captured.getvalue()
        if worker is not None:
            output = "".join(worker.outputs) + worker.take_fd_output() + output
            if died:
                worker.stop()
        events.emit(
            event="result", id=spec.id, status=status, message=message, detail=detail,
            output=output[-MAX_OUTPUT_CHARS:], fuzz=list(ctx.fuzz_runs),
            seconds=round(time.monotonic() - started, 3),
        )


def _stopped_message(clock: CheckClock) -> str:
    where = f", at {clock.where}" if clock.where else ""
    return (f"stopped: your code computed for {clock.limit:.0f} s of CPU time in this check without finishing"
            f"{where}. Look for a loop that never ends (a while loop whose condition never changes, a worklist "
            f"that refills itself, a graph walk that revisits nodes) or a step far slower than it needs to be. "
            f"The other checks ran on.")


def warm_up() -> None:
    """Pay the one-time costs in the parent, so every forked child starts warm: the first Dynamo compile,
    aot_autograd, make_fx and export with run_decompositions, on a tiny model (then Dynamo's caches are reset,
    so no child meets code compiled before it)."""
    import torch
    import torch._dynamo
    import torch.fx
    from torch.fx.experimental.proxy_tensor import make_fx

    skip_guard_latency_probe()
    torch.set_num_threads(1)  # as checker children: one intra-op thread, and no thread pool alive at fork
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU())
    x = torch.randn(2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.fx.symbolic_trace(model)
        make_fx(model)(x)
        torch.compile(model, backend="aot_eager")(x).sum().backward()
        with torch.no_grad():
            torch.compile(model, backend="eager")(x)
        torch.export.export(model, (x,)).run_decompositions()
    torch._dynamo.reset()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m checker.trusted.checks_process")
    parser.add_argument("--checks", required=True, type=Path)
    parser.add_argument("--attempt", required=True, type=Path)
    parser.add_argument("--reference", required=True, type=Path)
    parser.add_argument("--module-name", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--only", default="")
    parser.add_argument("--shard", default="0/1", help="INDEX/COUNT: with COUNT > 1, share the checks with the other shards")
    parser.add_argument("--claims", type=Path, default=None, help="folder where shards claim checks")
    parser.add_argument("--first", default="", help="check ids to run before the others, in this order")
    parser.add_argument("--check-limit", type=float, default=None,
                        help="every check's own CPU-second limit (default: from the kata's mutation report)")
    parser.add_argument("--results-fd", type=int, required=True)
    args = parser.parse_args(argv)

    harden_trusted_process()
    tempfile.tempdir = None  # TMPDIR as this run gives it (a warm server's fork remembers the server's)
    events = _Events(args.results_fd)
    events.emit(event="started", wall=time.time())
    phase = _PhaseClock(events)
    warnings.simplefilter("ignore")
    attempt_path = args.attempt.resolve()
    from checker.channel.answers import ChannelBroken
    from checker.trusted.stand_ins import RemoteModule, Worker

    worker = Worker(attempt_path, args.module_name)
    try:
        from checker.attempt.sandbox import Sandbox

        sandboxed = Sandbox.from_env()
        started_early = sandboxed is not None and sandboxed.mode == "namespace"
        if started_early:  # a fresh interpreter in bubblewrap, not a fork: it imports torch while this one does
            worker.spawn()
        if sandboxed is not None and sandboxed.mode != "none":
            from checker.attempt.sandbox import confine_interpreters

            confine_interpreters()  # kata 8's replay of a saved program runs as confined as the worker
        import torch  # noqa: F401 - imported here so its start-up time is not charged to a check

        import katas.common  # noqa: F401 - what the worker needs too: it is forked right after, warm
        import torch.fx._graph_pickler  # noqa: F401 - the channel's pickler pulls in Dynamo (~1.8 s): once, before the fork

        skip_guard_latency_probe()

        import checker.channel.graphs  # noqa: F401
        phase("imports")
        if not started_early:
            worker.spawn()  # before the checks and the reference load: the worker gets a copy of nothing of theirs
        phase("worker")
        checks_module = load_module(args.checks, "kata_hidden_checks")
        only = {c for c in args.only.split(",") if c}
        specs = [s for s in checks_module.CHECKS.specs if not only or s.id in only]
        events.emit(event="plan", checks=[(s.id, s.stage, s.name, s.weight) for s in specs])
        phase("load_checks")
        # The reference loads before the attempt does (in the worker), so nothing the attempt does at import
        # can reach it; the attempt meets a fresh process, as it would on the learner's own machine.
        reference = load_module(args.reference, f"reference_{args.module_name}")
        worker.services.update(checks_module.CHECKS.services)
        worker.setup = list(checks_module.CHECKS.worker_setup)
        phase("load_reference")
        try:
            hello = worker.load()
            phase("import_attempt")
            events.emit(event="ready")  # the time limit counts from here (checker/run/runner.py, STARTUP_CPU_SECONDS)
        except ChannelBroken as broken:
            events.emit(event="import_error", file=str(attempt_path), line=None, message=str(broken), detail="")
            return 0
        if not hello.get("ok"):
            error = hello["error"]
            text = error["message"] if error["qualname"] == "SyntaxError" else (str(error["message"]).strip().splitlines() or [""])[0]
            events.emit(event="import_error", file=str(attempt_path), line=error.get("line"),
                        message=f"{error['qualname']}: {text}", detail=str(error.get("traceback", "")),
                        output=str(hello.get("output", "")))
            return 0
        ctx = Context(attempt=RemoteModule(worker), reference=reference, seed=args.seed, profile=env_profile())
        index, count = (int(part) for part in args.shard.split("/"))
        first, rest = _first(specs, [c for c in args.first.split(",") if c])
        if count > 1:  # shards share the checks: odd shards walk the rest backwards, each claims a check before running it
            specs = _claimed(first + (rest[::-1] if index % 2 else rest), args.claims)
        else:
            specs = first + rest
        limits = (check_limits(args.checks, ctx.profile) if args.check_limit is None
                  else {spec.id: args.check_limit for spec in checks_module.CHECKS.specs})
        run_checks(specs, ctx, events, attempt_path, worker=worker, limits=limits)
        phase("checks")
        events.emit(event="done")
    finally:
        worker.stop()
        kill_children()
    return 0


if __name__ == "__main__":
    exit_without_teardown(main())
