"""CPU seconds a process, or a process and everything it started, has used: the clock time limits read.

A time limit in wall-clock seconds is a verdict about the machine as much as the attempt: on a busy machine a
correct attempt runs past it (a passing kata 5 attempt scored `timeout` while a mutation run shared the 2 cores).
CPU seconds are what the attempt itself spent, the same on an idle machine and a loaded one. A process that waits
rather than computes (a sleep, `input()`, a lock) spends none, so callers keep a wall-clock backstop as well.

Linux reads /proc; elsewhere every figure is 0.0 and only the wall-clock backstop applies.
"""
from __future__ import annotations

import os

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_fields(pid: int | str) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (which may hold spaces and parentheses); None if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def can_measure() -> bool:
    """Whether this machine lets us read CPU seconds (Linux's /proc); elsewhere limits fall back to wall time."""
    return os.path.isfile("/proc/self/stat")


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used itself; 0.0 when it is gone or there is no /proc."""
    fields = _stat_fields(pid)
    return 0.0 if fields is None else (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds used by `pid` and every live descendant, plus the children each of them has already reaped
    (stat's cutime and cstime). A descendant that exited without being reaped, or one orphaned to another
    parent, is not counted: the figure can only be low, never high, so a limit read from it never stops an
    attempt early."""
    parents: dict[int, int] = {}
    spent: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0.0
    for name in entries:
        if not name.isdigit():
            continue
        fields = _stat_fields(name)
        if fields is None:
            continue
        parents[int(name)] = int(fields[1])
        spent[int(name)] = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    if pid not in spent:
        return 0.0
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        total += spent.get(current, 0)
        todo.extend(children.get(current, ()))
    return total / _TICKS
