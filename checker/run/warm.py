"""Warm start: a process that has paid torch's start-up once forks the checks process of every run.

A cold run starts `python -m checker.trusted.checks_process` for each shard: about 1.3 s to start Python and import
torch, Hypothesis and the channel, then 1-1.8 s the first time Dynamo, make_fx and export are used in the process.
Both are the same on every run. A warm server pays them once: it imports what the checks process imports before its
worker forks (torch, Hypothesis, katas.common, the channel's pickler), warms Dynamo, aot_autograd, make_fx and export
on a tiny model (`checker.trusted.checks_process.warm_up`, which resets Dynamo's caches after), and then, for each
run, forks a child that becomes the process `python -m checker.trusted.checks_process ...` would have been: a new
session, the run's folder, environment, output file and results pipe. That child loads the kata's checks and the
reference, and its worker imports the attempt, so every edit is seen and nothing of one run reaches the next.

Two kinds of server speak one protocol:
- the learner's per-user server (`checker kata`, `watch`, `all`, `diff`, `graph`), at a socket in a folder only
  this user can open. The first run that finds none starts it; it ends after `idle_seconds()` without a run, on
  `python -m checker warm stop`, or at the first request after the code it imported changed;
- a private server (`checker grade`), reached over a socket pair only the grading process holds, and ended
  with it: no attempt graded earlier can put its own server in its place.

Anything wrong on the way to a warm start (no fork, no server, a server that does not answer, or one started
by an attempt's code) means a cold start, with the same results (tests/test_warm.py compares them).

Protocol: the client sends one byte (carrying file descriptors for a run) and then a frame, a 4-byte length and
JSON. `run` -> {"pid"} once the child is forked, then {"exit": returncode} once it has been reaped; its "program"
is "checks" (checker/trusted/checks_process.py) or "sample" (checker/trusted/sample_process.py, for `diff` and `graph`);
`status` -> the server's facts; `stop` -> {"stopping": true}.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from checker.core.manifest import REPO_ROOT

PROTOCOL = 1
# What a run request may ask the server to fork: the checks process of `checker kata` and friends, or the
# sample process behind `make diff` / `make graph` (it imports the attempt itself: it shows, it does not score).
PROGRAMS = {"checks": "checker.trusted.checks_process", "sample": "checker.trusted.sample_process"}
DEFAULT_IDLE_SECONDS = 900.0
READY_TIMEOUT_S = 90.0  # a server warms up in 3-6 s; far more means it is stuck
REPLY_TIMEOUT_S = 15.0
# Environment variables read when torch (or the interpreter) starts: a server started under other values
# would not be the process a cold start makes, so they are part of its fingerprint.
_STARTUP_ENV_PREFIXES = ("TORCH", "PYTORCH", "OMP_", "MKL_", "KMP_", "LD_", "PYTHONHASHSEED", "PYTHONPATH")


class WarmUnavailable(RuntimeError):
    """No warm start this time (the reason says why); the caller starts the run cold."""


# --- where the learner's server lives, and what it must match ---------------------------------------------

def enabled() -> bool:
    """FX_KATAS_WARM=0 (or off/no/false) turns warm starts off: every run starts cold."""
    return os.environ.get("FX_KATAS_WARM", "1").strip().lower() not in ("0", "off", "no", "false")


def idle_seconds() -> float:
    try:
        return float(os.environ.get("FX_KATAS_WARM_IDLE", DEFAULT_IDLE_SECONDS))
    except ValueError:
        return DEFAULT_IDLE_SECONDS


def server_dir() -> Path:
    """The folder of the per-user server's socket, lock and log: FX_KATAS_WARM_DIR, else $XDG_RUNTIME_DIR/fx-katas,
    else <tmp>/fx-katas-<uid>. Created private (0700); one that others can open is refused."""
    import tempfile

    given = os.environ.get("FX_KATAS_WARM_DIR")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(given) if given else (Path(runtime) / "fx-katas" if runtime else
                                        Path(tempfile.gettempdir()) / f"fx-katas-{os.getuid()}")
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise WarmUnavailable(f"{folder} is not private to this user (owner {info.st_uid}, mode "
                              f"{oct(info.st_mode & 0o777)}): not starting a server there")
    return folder


def _server_key() -> str:
    """One server per repository and interpreter."""
    return hashlib.sha256(f"{REPO_ROOT}\0{sys.executable}".encode()).hexdigest()[:12]


_MAX_SOCKET_PATH = 100  # sockaddr_un holds 108 bytes; the temporary name a server binds first is a little longer


def socket_path() -> Path:
    path = server_dir() / f"server-{_server_key()}.sock"
    if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
        raise WarmUnavailable(f"{path} is too long for a Unix socket: set FX_KATAS_WARM_DIR to a shorter folder")
    return path


def code_fingerprint(env: dict[str, str] | None = None) -> str:
    """What a warm server must share with the run it forks: the protocol, the interpreter, the installed torch,
    every file of the checker and of katas/common (the server imported them), and the environment torch
    reads when it starts. The attempt, the checks and the references are not in it: the forked child
    imports those itself."""
    from importlib.metadata import PackageNotFoundError, version

    env = os.environ if env is None else env
    digest = hashlib.sha256(f"{PROTOCOL}\0{sys.executable}\0{sys.version}".encode())
    try:
        digest.update(version("torch").encode())
    except PackageNotFoundError:
        digest.update(b"no torch")
    for folder in (REPO_ROOT / "checker", REPO_ROOT / "katas" / "common"):
        for path in sorted(folder.rglob("*.py")):  # every subpackage: the layout is folders
            info = path.stat()
            digest.update(f"{path.relative_to(REPO_ROOT)}\0{info.st_mtime_ns}\0{info.st_size}\0".encode())
    for key in sorted(env):
        if key.startswith(_STARTUP_ENV_PREFIXES):
            value = env[key]
            if key == "PYTHONPATH":  # the same folders, however often the caller's own PYTHONPATH repeats them
                value = os.pathsep.join(dict.fromkeys(filter(None, value.split(os.pathsep))))
            digest.update(f"{key}={value}\0".encode())
    return digest.hexdigest()[:16]


def server_env() -> dict[str, str]:
    """The environment a server starts in: the one a cold checks process gets (checker.core.processes.child_env)."""
    from checker.core.processes import child_env

    return child_env()


# --- framing ------------------------------------------------------------------------------------------------

def client_niceness() -> int:
    """This process's niceness, which a run forked for it takes on (`nice make kata` stays nice when warm)."""
    return os.getpriority(os.PRIO_PROCESS, 0)


def _take_niceness(niceness: object) -> None:
    """In a forked run: become as nice as the client that asked for it. The server's own niceness is whoever
    started it first; a run asked for by `nice -n 10 make kata` must not compete with other work at that
    priority. Only ever nicer: lowering it needs privileges, and an asker gets no more than the server has."""
    if isinstance(niceness, int) and niceness > os.getpriority(os.PRIO_PROCESS, 0):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, min(niceness, 19))


def _send_request(sock: socket.socket, message: dict, fds: tuple[int, ...] = ()) -> None:
    """A request: one byte (carrying `fds`, if any), then the frame."""
    if fds:
        socket.send_fds(sock, [b"F"], list(fds))
    else:
        sock.sendall(b"-")
    _send(sock, message)


def _send(sock: socket.socket, message: dict) -> None:
    """A frame: 4-byte length, then JSON."""
    data = json.dumps(message).encode()
    sock.sendall(struct.pack("!I", len(data)) + data)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise EOFError("the other end closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _recv_frame(sock: socket.socket) -> dict:
    (size,) = struct.unpack("!I", _recv_exact(sock, 4))
    if size > 1 << 22:
        raise EOFError(f"a frame of {size} bytes is not one of this protocol's")
    message = json.loads(_recv_exact(sock, size))
    if not isinstance(message, dict):
        raise EOFError("a frame that is not a JSON object")
    return message


def _recv_request(sock: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(sock, 1, 4)
    if not data:
        for fd in fds:
            os.close(fd)
        raise EOFError("the client closed the connection")
    return _recv_frame(sock), fds


# --- the server -----------------------------------------------------------------------------------------------

def _warm_imports() -> float:
    """Import and warm what every checks process and worker needs; returns the seconds it took."""
    started = time.monotonic()
    import hypothesis  # noqa: F401
    import torch  # noqa: F401
    import torch.fx._graph_pickler  # noqa: F401 - the channel's pickler: Dynamo comes with it

    import checker.attempt.worker  # noqa: F401
    import checker.channel.graphs  # noqa: F401
    import checker.kit.checks  # noqa: F401
    import checker.kit.pictures  # noqa: F401 - what `make graph`'s sample process draws with
    import checker.trusted.checks_process  # noqa: F401
    import checker.trusted.sample_process  # noqa: F401
    import checker.trusted.stand_ins  # noqa: F401
    import katas.common  # noqa: F401
    import katas.common.capture  # noqa: F401
    import katas.common.npu  # noqa: F401
    import katas.common.strategies  # noqa: F401
    import katas.common.zoo  # noqa: F401
    from checker.trusted.checks_process import warm_up

    warm_up()
    return time.monotonic() - started


_SET_BY_IMPORTS: dict[str, str] = {}
_SERVER_CWD = ""  # the folder the server started in (set by serve_main)


class _Run:
    def __init__(self, pid: int, conn: socket.socket) -> None:
        self.pid, self.conn = pid, conn


class Server:
    """The warm parent. `serve()` answers requests until stopped, idle, stale, or (private) its owner is gone.

    It never runs an attempt or a kata's checks: those are imported by the children it forks. It is not
    dumpable (no process of this user can read or write its memory) and the reaper of whatever a run's
    processes leave behind."""

    def __init__(self, *, listener: socket.socket | None = None, control: socket.socket | None = None,
                 idle: float = DEFAULT_IDLE_SECONDS, warm_seconds: float = 0.0,
                 address: tuple[Path, int] | None = None, fingerprint: str | None = None) -> None:
        self.listener, self.control = listener, control
        self.address = address  # (socket path, its inode): a server whose file was replaced is unreachable
        self.idle = idle
        self.warm_seconds = warm_seconds
        self.fingerprint = fingerprint or code_fingerprint()
        self.started = time.time()
        self.runs: dict[int, _Run] = {}
        self.count = 0
        self.stopping = False
        self.last_activity = time.monotonic()
        self.selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = socket.socketpair()

    # -- lifetime

    def serve(self) -> int:
        self._wake_read.setblocking(False)
        self._wake_write.setblocking(False)
        signal.set_wakeup_fd(self._wake_write.fileno())
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wake-up fd does the work
        signal.signal(signal.SIGTERM, self._on_term)
        self.selector.register(self._wake_read, selectors.EVENT_READ, "wake")
        if self.listener is not None:
            self.selector.register(self.listener, selectors.EVENT_READ, "listener")
        if self.control is not None:
            self.selector.register(self.control, selectors.EVENT_READ, "control")
        try:
            while not (self.stopping and not self.runs):
                for key, _ in self.selector.select(timeout=1.0):
                    self._on_ready(key)
                self._reap()
                if not self.runs and self.listener is not None and time.monotonic() - self.last_activity > self.idle:
                    break
                if self.address is not None and not self._reachable():
                    self.stopping = True
        finally:
            for run in list(self.runs.values()):
                _kill_group(run.pid)
            self._reap()
        return 0

    def _reachable(self) -> bool:
        path, inode = self.address
        try:
            return path.stat().st_ino == inode
        except OSError:
            return False

    def _on_term(self, *_: object) -> None:
        self.stopping = True
        for run in self.runs.values():
            _kill_group(run.pid)

    def _on_ready(self, key: selectors.SelectorKey) -> None:
        if key.data == "wake":
            with contextlib.suppress(BlockingIOError):
                while self._wake_read.recv(4096):
                    pass
        elif key.data == "listener":
            conn, _ = self.listener.accept()
            self._answer(conn, public=True)
        elif key.data == "control":  # a private server's owner hands over one end of a new socket pair
            try:
                data, fds, _, _ = socket.recv_fds(self.control, 1, 1)
            except OSError:
                data, fds = b"", []
            if not data:  # the owner is gone: so is every reason to run
                self.stopping = True
                self._on_term()
                self.selector.unregister(self.control)
                return
            for fd in fds:
                self._answer(socket.socket(fileno=fd))
        else:  # a run's connection: readable only when its client went away (Ctrl-C), so the run ends too
            run: _Run = key.data
            with contextlib.suppress(OSError):
                if run.conn.recv(1):
                    return
            self.selector.unregister(run.conn)
            _kill_group(run.pid)

    def _answer(self, conn: socket.socket, *, public: bool = False) -> None:
        """Answer one request. `public`: it came through the socket in the user's folder (not from a private
        server's owner), so a run may only use the checks and references of this repository."""
        self.last_activity = time.monotonic()
        conn.settimeout(REPLY_TIMEOUT_S)
        fds: list[int] = []
        try:
            request, fds = _recv_request(conn)
            op = request.get("op")
            problem = _peer_problem(conn) if public else ""
            if problem:  # never serve an attempt: a run it asked for would be a trusted process of its choosing
                _send(conn, {"refused": problem})
            elif op == "status":
                _send(conn, self.status())
            elif op == "stop":
                self.stopping = True
                _send(conn, {"stopping": True})
            elif op == "run":
                if self.stopping:
                    _send(conn, {"refused": "the warm server is stopping"})
                elif request.get("fingerprint") != self.fingerprint:
                    self.stopping = True  # its code or environment changed since it started: a new one is due
                    _send(conn, {"refused": "the warm server was started before the checker's code or environment "
                                            "changed; it stops now"})
                elif len(fds) != 2:
                    _send(conn, {"refused": "a run needs its results pipe and output file"})
                elif request.get("program", "checks") not in PROGRAMS:
                    _send(conn, {"refused": f"unknown program {request.get('program')!r}"})
                elif public and _foreign_code(request.get("argv", [])):
                    _send(conn, {"refused": _foreign_code(request.get("argv", []))})
                else:
                    self._fork_run(conn, request, fds)
                    return
            else:
                _send(conn, {"refused": f"unknown request {op!r}"})
        except (OSError, EOFError, ValueError):
            pass
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        conn.close()

    def status(self) -> dict:
        return {"protocol": PROTOCOL, "pid": os.getpid(), "fingerprint": self.fingerprint, "started": self.started,
                "runs": self.count, "running": len(self.runs), "warm_seconds": round(self.warm_seconds, 2),
                "idle_seconds": self.idle, "private": self.listener is None}

    # -- runs

    def _fork_run(self, conn: socket.socket, request: dict, fds: list[int]) -> None:
        results_fd, output_fd = fds
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                conn.close()  # the client's connection stays with the server
                self._become_run_process(request, results_fd, output_fd)
            finally:
                os._exit(code)
        self.count += 1
        conn.settimeout(None)
        try:
            _send(conn, {"pid": pid})
        except OSError:  # the client left before the run started
            _kill_group(pid)
            conn.close()
            return
        run = _Run(pid, conn)
        self.runs[pid] = run
        self.selector.register(conn, selectors.EVENT_READ, run)

    def _become_run_process(self, request: dict, results_fd: int, output_fd: int) -> None:
        """In the forked child: turn into the process `python -m checker.trusted.checks_process ARGS` would be (or
        `checker.trusted.sample_process`, as the request's program says), and run it."""
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        for sock in [self.listener, self.control, self._wake_read, self._wake_write,
                     *(run.conn for run in self.runs.values())]:
            if sock is not None:
                sock.close()
        os.setsid()
        _take_niceness(request.get("niceness"))
        cwd = str(request["cwd"])
        os.chdir(cwd)
        if sys.path and sys.path[0] == _SERVER_CWD:
            sys.path[0] = cwd  # as for `python -m checker.trusted.checks_process` started in the run's folder
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        os.close(devnull)
        os.close(output_fd)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in dict(request["env"]).items()})
        for key, value in _SET_BY_IMPORTS.items():
            os.environ.setdefault(key, value)
        import importlib

        from checker.core.processes import exit_without_teardown

        module = PROGRAMS[request.get("program", "checks")]
        sys.argv = [module, *request["argv"]]
        main = importlib.import_module(module).main
        exit_without_teardown(main([*map(str, request["argv"]), "--results-fd", str(results_fd)]))

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            run = self.runs.pop(pid, None)
            if run is None:
                continue  # something a run left behind, re-parented here
            _kill_group(pid)  # the worker, and whatever else stayed in the run's session
            self._kill_strays()
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(run.conn)
            with contextlib.suppress(OSError):
                _send(run.conn, {"exit": os.waitstatus_to_exitcode(status)})
            run.conn.close()
            self.last_activity = time.monotonic()

    def _kill_strays(self) -> None:
        """Kill this process's children that are not a running run: what an attempt orphaned outside its session."""
        from checker.core.processes import child_pids

        for pid in child_pids():
            if pid not in self.runs:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _harden_server() -> None:
    """Not dumpable (its memory is what every run starts from) and the reaper of orphans (Linux only)."""
    from checker.core.processes import harden_trusted_process

    harden_trusted_process()


def serve_main(argv: list[str]) -> int:
    """`python -m checker.run.warm serve (--socket PATH [--ready-fd N] | --control-fd N) [--idle S]`: warm up, then
    serve. --ready-fd gets "ready" once the socket listens."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m checker.run.warm serve")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--socket", type=Path)
    where.add_argument("--control-fd", type=int)
    parser.add_argument("--ready-fd", type=int, default=None)
    parser.add_argument("--idle", type=float, default=DEFAULT_IDLE_SECONDS)
    args = parser.parse_args(argv)
    global _SERVER_CWD

    _harden_server()
    fingerprint = code_fingerprint()  # before torch is imported: importing it sets variables of its own
    _SERVER_CWD = os.getcwd()  # sys.path[0] of `python -m`: the forked child points it at its own folder
    sys.dont_write_bytecode = True
    if os.environ.get("OMP_NUM_THREADS", "1") != "1":
        print("warm server: OMP_NUM_THREADS must be 1 (a thread pool does not survive fork)", file=sys.stderr)
        return 2
    before = dict(os.environ)
    warm_seconds = _warm_imports()
    # what importing torch put in the environment (TORCHINDUCTOR_CACHE_DIR): a cold child's imports would too
    _SET_BY_IMPORTS.update({k: v for k, v in os.environ.items() if before.get(k) != v})
    if args.control_fd is not None:
        control = socket.socket(fileno=args.control_fd)
        control.sendall(b"R")  # ready
        return Server(control=control, idle=args.idle, warm_seconds=warm_seconds, fingerprint=fingerprint).serve()
    listener, inode = _listen(args.socket)
    with contextlib.suppress(OSError):
        args.socket.with_suffix(".starting").unlink()
    try:
        if args.ready_fd is not None:
            os.write(args.ready_fd, b"ready\n")
            os.close(args.ready_fd)
        return Server(listener=listener, idle=args.idle, warm_seconds=warm_seconds,
                      address=(args.socket, inode), fingerprint=fingerprint).serve()
    finally:
        _unlink_if_ours(args.socket, inode)


def _listen(path: Path) -> tuple[socket.socket, int]:
    """Listen at `path`, bound under a temporary name and renamed into place, so a client never meets a
    socket that is not answering yet. Returns the socket and the inode of its file."""
    temporary = path.with_name(f"{path.stem}.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(temporary))
    os.chmod(temporary, 0o600)
    listener.listen(16)
    os.replace(temporary, path)
    return listener, path.stat().st_ino


def _unlink_if_ours(path: Path, inode: int) -> None:
    """Remove the socket file, unless a newer server has already put its own there."""
    with contextlib.suppress(OSError):
        if path.stat().st_ino == inode:
            path.unlink()


# --- the client -----------------------------------------------------------------------------------------------

class WarmChild:
    """A checks process a warm server forked: the parts of subprocess.Popen the runner uses (pid, poll, wait,
    returncode). Its exit status arrives on the run's connection once the server has reaped it."""

    def __init__(self, conn: socket.socket, pid: int) -> None:
        self.conn, self.pid = conn, pid
        self.returncode: int | None = None
        self.args = f"warm checks process {pid}"

    def poll(self) -> int | None:
        self._read(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            self._read(0.25 if left is None else min(left, 0.25))
        return self.returncode

    def _read(self, timeout: float) -> None:
        if self.returncode is not None:
            return
        if self.conn.fileno() < 0:
            self._check_gone()
            return
        ready, _, _ = select.select([self.conn], [], [], timeout)
        if not ready:
            return
        try:
            self.conn.settimeout(REPLY_TIMEOUT_S)
            message = _recv_frame(self.conn)
        except (OSError, EOFError, ValueError):  # the server died: watch the process itself from now on
            self.conn.close()
            self._check_gone()
            return
        self.returncode = int(message.get("exit", 1))
        self.conn.close()

    def _check_gone(self) -> None:
        if not _alive(self.pid):
            self.returncode = -signal.SIGKILL


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


class WarmLauncher:
    """Starts checks processes by asking a warm server to fork them. `connect()` returns a new connection to
    the server (a socket path for the learner's server, a socket pair for a private one)."""

    def __init__(self, connect: Callable[[], socket.socket], fingerprint: str, description: str) -> None:
        self._connect = connect
        self.fingerprint = fingerprint
        self.description = description
        self.broken: str | None = None  # why the last start failed; later runs of this launcher go cold

    def start(self, argv: list[str], env: dict[str, str], cwd: Path, output_fd: int, results_fd: int,
              program: str = "checks") -> WarmChild:
        """Fork a process running `python -m checker.trusted.checks_process ARGV` (without --results-fd) in the
        server, or `checker.trusted.sample_process` for program "sample" (PROGRAMS). WarmUnavailable when the server
        cannot start it; the caller then starts it cold."""
        if self.broken:
            raise WarmUnavailable(self.broken)
        try:
            conn = self._connect()
            conn.settimeout(REPLY_TIMEOUT_S)
            _send_request(conn, {"op": "run", "program": program, "argv": argv, "env": env, "cwd": str(cwd),
                                 "fingerprint": self.fingerprint, "niceness": client_niceness()},
                          (results_fd, output_fd))
            reply = _recv_frame(conn)
        except (OSError, EOFError, ValueError) as exc:
            self.broken = f"the warm server did not answer ({type(exc).__name__}: {exc})"
            raise WarmUnavailable(self.broken) from None
        if "pid" not in reply:
            conn.close()
            self.broken = str(reply.get("refused", "the warm server refused the run"))
            raise WarmUnavailable(self.broken)
        return WarmChild(conn, int(reply["pid"]))


def _request(path: Path, message: dict, timeout: float = REPLY_TIMEOUT_S) -> dict:
    conn = _connect_path(path, timeout)
    with conn:
        _send_request(conn, message)
        return _recv_frame(conn)


def _connect_path(path: Path, timeout: float = REPLY_TIMEOUT_S) -> socket.socket:
    """A connection to the server at `path`, after checking who answers: a process of this user, and not one
    started by an attempt (an attempt's worker, and everything it starts, runs with no_new_privs set; see
    checker/attempt/worker.py), which could otherwise answer the next runs with forged results."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(str(path))
        pid, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    except OSError:
        conn.close()
        raise
    problem = None
    if uid != os.getuid():
        problem = f"the process at {path} runs as user {uid}, not as you"
    elif _no_new_privs(pid) and not _no_new_privs(os.getpid()):
        problem = (f"the process at {path} (pid {pid}) was started by an attempt's code, not by the checker; "
                   "it is not used")
    if problem:
        conn.close()
        raise ConnectionRefusedError(problem)
    return conn


def _peer_problem(conn: socket.socket) -> str:
    """Why the process at the other end of `conn` may not ask for runs ("" when it may): it must run as this
    server's user and must not descend from an attempt (the worker sets no_new_privs, and everything it starts
    keeps it)."""
    try:
        pid, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    except OSError as exc:
        return f"who is asking cannot be told ({exc})"
    if uid != os.geteuid():
        return f"user {uid} may not use this server"
    if _no_new_privs(pid) and not _no_new_privs(os.getpid()):
        return "a process started by an attempt's code may not ask the warm server for runs"
    return ""


def _foreign_code(argv: list) -> str:
    """Why a public run request names code this server will not run ("" when it names none): the checks and
    references it runs are this repository's own (`--checks`, `--reference`, `--hook`)."""
    from checker.core.manifest import KATAS_DIR, SOLUTIONS_DIR, load_katas

    allowed = {kata.checks_path.resolve() for kata in load_katas()} | {kata.solution_path.resolve() for kata in load_katas()}
    allowed |= {p.resolve() for p in KATAS_DIR.glob("*/hidden/*.py")} | {p.resolve() for p in SOLUTIONS_DIR.glob("*/*.py")}
    words = [str(a) for a in argv]
    for flag, value in zip(words, words[1:]):
        if flag in ("--checks", "--reference", "--hook") and Path(value).resolve() not in allowed:
            return f"{flag} {value}: not a file of this repository's katas; the warm server runs only its own checks"
    return ""


def _no_new_privs(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            return any(line.split() == ["NoNewPrivs:", "1"] for line in status)
    except OSError:
        return False


@contextlib.contextmanager
def _locked(path: Path):
    import fcntl

    with open(path, "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# Servers this process started: the runner reaps what its children orphan (checker.run.runner._kill_orphans),
# and must not take a server it started for one.
STARTED_PIDS: set[int] = set()


def server_status() -> dict | None:
    """The learner's server's status, or None when none answers."""
    try:
        return _request(socket_path(), {"op": "status"})
    except (OSError, EOFError, ValueError, WarmUnavailable):
        return None


def stop_server() -> bool:
    """Ask the learner's server to stop; whether one was running."""
    try:
        return bool(_request(socket_path(), {"op": "stop"}).get("stopping"))
    except (OSError, EOFError, ValueError, WarmUnavailable):
        return False


def _checked() -> tuple[dict[str, str], str, Path]:
    """The server's environment, the fingerprint it must have and its socket; WarmUnavailable if none may run."""
    if not enabled():
        raise WarmUnavailable("warm starts are off (FX_KATAS_WARM=0)")
    if not hasattr(os, "fork") or not hasattr(socket, "AF_UNIX") or not hasattr(socket, "send_fds"):
        raise WarmUnavailable("this platform has no fork() or no Unix sockets")
    env = server_env()
    if env.get("OMP_NUM_THREADS") != "1":
        raise WarmUnavailable(f"OMP_NUM_THREADS={env.get('OMP_NUM_THREADS')}: a warm start needs one thread")
    return env, code_fingerprint(env), socket_path()


def _current_status(path: Path, fingerprint: str) -> dict | None:
    """The status of the server at `path` if it is one this run may use; an out-of-date one is told to stop."""
    try:
        status = _request(path, {"op": "status"})
    except (OSError, EOFError, ValueError):
        return None
    if status.get("fingerprint") != fingerprint:
        with contextlib.suppress(OSError, EOFError, ValueError):
            _request(path, {"op": "stop"})
        return None
    return status


def _starting(path: Path) -> int | None:
    """The pid of a server still warming up for `path` (it removes the marker once it listens), if alive."""
    try:
        pid = int(path.with_suffix(".starting").read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _alive(pid) else None


def learner_launcher(*, wait: bool = True) -> WarmLauncher:
    """A launcher on the learner's per-user server. When none answers: with `wait`, start one (or wait for the
    one warming up) and wait until it listens; without, WarmUnavailable (the caller runs cold, then may call
    `start_in_background`). WarmUnavailable also when warm starts are off or not possible here."""
    env, fingerprint, path = _checked()
    with _locked(path.with_suffix(".lock")):
        if _current_status(path, fingerprint) is None:
            if not wait:
                raise WarmUnavailable("no warm server is running" if _starting(path) is None
                                      else "the warm server is still warming up")
            if _starting(path) is None:
                _start_server(path, env)
            _wait_until_listening(path, fingerprint)
    return WarmLauncher(lambda: _connect_path(path), fingerprint, f"warm server at {path}")


def start_in_background() -> bool:
    """Start the learner's server unless one runs or is warming up; do not wait for it. Whether one was started."""
    try:
        env, fingerprint, path = _checked()
        with _locked(path.with_suffix(".lock")):
            if _current_status(path, fingerprint) is not None or _starting(path) is not None:
                return False
            _start_server(path, env)
            return True
    except (WarmUnavailable, OSError):
        return False


def _wait_until_listening(path: Path, fingerprint: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if _current_status(path, fingerprint) is not None:
            return
        if _starting(path) is None and _current_status(path, fingerprint) is None:
            break  # it died while warming up
        time.sleep(0.05)
    raise WarmUnavailable(f"the warm server did not start (its log: {path.with_suffix('.log')})")


def _start_server(path: Path, env: dict[str, str]) -> None:
    """Spawn a server for `path` (it warms up, then listens and removes the `.starting` marker written here)."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a dead server's socket, or one whose process is not the checker's
    with open(path.with_suffix(".log"), "wb") as output:
        proc = subprocess.Popen(
            [sys.executable, "-m", "checker.run.warm", "serve", "--socket", str(path), "--idle", str(idle_seconds())],
            cwd=path.parent, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True)
    STARTED_PIDS.add(proc.pid)
    path.with_suffix(".starting").write_text(str(proc.pid))
    threading.Thread(target=proc.wait, daemon=True, name="fx-katas-warm-server").start()  # reaped if it ends early


class PrivateServer:
    """A warm server only this process can reach (over a socket pair), for grading many attempts: started
    before any attempt runs, and ended with this object (or this process)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self._lock = threading.Lock()
        self.problem: str | None = None

    def start(self) -> "PrivateServer":
        env = server_env()
        try:
            if not enabled():
                raise WarmUnavailable("warm starts are off (FX_KATAS_WARM=0)")
            if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
                raise WarmUnavailable("this platform has no fork() or no fd passing")
            if env.get("OMP_NUM_THREADS") != "1":
                raise WarmUnavailable(f"OMP_NUM_THREADS={env.get('OMP_NUM_THREADS')}: a warm start needs one thread")
            ours, theirs = socket.socketpair()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "checker.run.warm", "serve", "--control-fd", str(theirs.fileno())],
                cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, pass_fds=(theirs.fileno(),))
            STARTED_PIDS.add(self.proc.pid)
            theirs.close()
            ours.settimeout(READY_TIMEOUT_S)
            if ours.recv(1) != b"R":
                raise WarmUnavailable("the private warm server did not start")
            ours.settimeout(None)
            self._control = ours
        except (OSError, WarmUnavailable) as exc:
            self.problem = str(exc)
            self.close()
        return self

    def launcher(self) -> WarmLauncher | None:
        if self._control is None:
            return None
        return WarmLauncher(self._connect, code_fingerprint(server_env()), "private warm server")

    def _connect(self) -> socket.socket:
        ours, theirs = socket.socketpair()
        try:
            with self._lock:
                if self._control is None:
                    raise OSError("the private warm server is closed")
                socket.send_fds(self._control, [b"C"], [theirs.fileno()])
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        return ours

    def close(self) -> None:
        with self._lock:
            if self._control is not None:
                self._control.close()  # the server sees its owner leave, and stops
                self._control = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            STARTED_PIDS.discard(self.proc.pid)

    def __enter__(self) -> "PrivateServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        return serve_main(argv[1:])
    print("usage: python -m checker.run.warm serve ...  (people: `python -m checker warm status|stop|start`)",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
