"""`python -m checker watch N` (`make watch N=k`): re-run a kata's checks every time its file is saved.

Polls the file's mtime and size (cheap), and on a change waits until they have been still for the debounce
time (editors write in several steps), then re-runs only if the content's hash changed. Ctrl-C stops it
cleanly: the running child process is killed (checker/run/runner.py) and no traceback is printed.
"""
from __future__ import annotations

import hashlib
import os
import signal
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Callable

from checker import PARENT_AT_START
from checker.core.manifest import display_path


CLEAR = "\033[2J\033[3J\033[H"


def _state(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def wait_for_change(path: Path, last_digest: str | None, *, interval: float, debounce: float,
                    alive: Callable[[], bool] = lambda: True) -> str | None:
    """Block until the file's content differs from `last_digest` and has been still for `debounce` seconds.

    A save made while the last run was going (or its report was printed) counts: the content is compared once
    before waiting, so that save is not missed until the next one."""
    seen = _state(path)
    current = _digest(path)
    if current != last_digest:
        time.sleep(debounce)
        return _digest(path)
    while True:
        time.sleep(interval)
        if not alive():
            raise KeyboardInterrupt  # nobody is left to read the next report
        now = _state(path)
        if now == seen:
            continue
        while True:  # settle: editors may truncate, write and rename in several steps
            time.sleep(debounce)
            settled = _state(path)
            if settled == now:
                break
            now = settled
        seen = now
        digest = _digest(path)
        if digest != last_digest:
            return digest


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _stop_on_signals() -> None:
    """Ctrl-C (even when started from a shell that ignores SIGINT in the background), SIGTERM and SIGHUP (its
    terminal closed) stop cleanly."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, _interrupt)


def _terminal_still_there(parent: int) -> Callable[[], bool]:
    """False once the process that started the watch is gone (`make watch` in a terminal that closed: the
    shell and make end, and this process is handed to another parent), so the watch does not run on unseen."""
    return lambda: os.getppid() == parent


def watch(path: Path, run_once: Callable[[], str], *, interval: float = 0.5, debounce: float = 0.3,
          out=None) -> int:
    """Run `run_once` now and after every saved change of `path` until Ctrl-C; returns the exit code."""
    out = out or sys.stdout
    clear = out.isatty()
    _stop_on_signals()
    alive = _terminal_still_there(PARENT_AT_START)
    shown = display_path(path)
    runs = 0
    try:
        digest = _digest(path)
        while True:
            if clear:
                out.write(CLEAR)
            elif runs:
                out.write("\n" + "─" * 72 + "\n")
            if digest is None:
                out.write(f"{shown} does not exist (yet?): waiting for it to appear.\n")
            else:
                out.write(run_once().rstrip() + "\n")
            runs += 1
            stamp = datetime.now().strftime("%H:%M:%S")
            out.write(f"\n[{stamp}] watching {shown}: save it to re-run the checks, Ctrl-C to stop.\n")
            out.flush()
            digest = wait_for_change(path, digest, interval=interval, debounce=debounce, alive=alive)
    except KeyboardInterrupt:
        try:
            out.write("\nStopped watching.\n")
            out.flush()
        except OSError:  # the terminal is gone
            pass
        return 0
