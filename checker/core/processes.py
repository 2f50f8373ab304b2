"""What every process the checker starts has in common: its environment, its end, its children.

The checker runs as a tree of processes (runner, warm server, checks process, worker, sample process, mutation
oracle); each piece here is used on more than one level of that tree, so it lives below all of them.
"""
from __future__ import annotations

import os
import sys

from checker.core.manifest import REPO_ROOT


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
    env["PYTHONWARNINGS"] = "ignore"
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # never leave __pycache__ beside a learner's file
    # Kata models are tiny: one intra-op thread is as fast, and parallel checkers do not oversubscribe the cores.
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update(extra or {})
    return env


def exit_without_teardown(code: int) -> None:
    """End a child process now that everything it reports is flushed.

    Interpreter teardown takes 0.7–1.2 s once torch, Dynamo and export are loaded (measured on 2.13, 2 cores):
    time the learner would spend waiting for a report that is already written.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def harden_trusted_process() -> None:
    """For a process that holds or reads results (the runner, the checks process, the warm server): no other
    process of this user may read its memory or file descriptors (PR_SET_DUMPABLE 0), and processes an attempt
    orphans become its children, so they can be ended with the run (PR_SET_CHILD_SUBREAPER). Linux only;
    elsewhere nothing happens."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def skip_guard_latency_probe() -> None:
    """Stop Dynamo from timing each new graph's guards. After every compile, torch 2.13 flushes the CPU cache and
    times one evaluation of the guards (`profile_guard_manager`), about 25 ms per compile on the reference machine,
    only to log "Guard eval latency" and keep a metric. The checks compile thousands of graphs and read neither,
    so every checker process (checks, worker, warm server, mutation oracle) skips it; what Dynamo compiles, guards
    and logs otherwise is unchanged."""
    import torch._dynamo.guards as guards

    if hasattr(guards, "profile_guard_manager"):
        guards.profile_guard_manager = lambda *args, **kwargs: 0.0


def kill_children() -> None:
    """SIGKILL every child of this process (the worker, and whatever it orphaned), until none is left."""
    import signal

    for _ in range(50):
        children = child_pids()
        if not children:
            return
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def child_pids() -> list[int]:
    me, found = os.getpid(), []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            found.append(int(entry))
    return found
