"""The trusted side of the trust boundary: the worker process that runs an attempt, and stand-ins for its code.

`ctx.attempt` in a check is a `RemoteModule`: `ctx.attempt.detect_dialect(gm)` sends `gm` to the worker, which
calls the attempt's function there and sends back *data*. The checks, the reference, the results channel and
every counter they read stay in this process; the attempt's code never runs here, and nothing it sends back is
more than data (see checker/channel/wire.py). What crosses:

* functions of the attempt's module are `RemoteFunction`s; its classes are mirrored by local classes whose
  methods forward through the channel (so `isinstance(x, ctx.attempt.NPUOperatorSupport)` and a torch base
  class such as `OperatorSupportBase` still hold), its exceptions by local exception classes (so
  `except ctx.attempt.MixedDialectError` works), its enums' members by `RemoteEnumMember`s;
* a GraphModule argument is uploaded once and cached in the worker until it changes here; a graph the
  attempt rewrote in place is rebuilt here from its description (checker/channel/graphs.py);
* any other object the attempt returns is a `RemoteObject` handle: calling it calls back into the worker.

`Context.probe(fn, ...)` runs a trusted probe function (a module-level function of a kata's hidden/probes.py)
in the worker, for checks that need the attempt's code inside torch machinery (torch.compile of a fix, a
backend): it returns only data.
"""
from __future__ import annotations

import builtins
import collections
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import types
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from checker.channel import wire
from checker.channel.answers import ProtocolError, RemoteEnumMember, RemoteRecord, WorkerDied, from_plain
from checker.channel.wire import GraphRef, HandleRef, ModuleRef, NodeRef

if TYPE_CHECKING:
    from checker.attempt.sandbox import Sandbox

DEFAULT_MEMORY_LIMIT_MB = 4096
MAX_FD_OUTPUT = 16_000  # characters of fd-level output (C extensions, os.write) kept per run


class RemoteError(Exception):
    """Base of the local stand-ins for exceptions the attempt raised in the worker.

    `remote_type` is the attempt's exception class name, `attempt_line`/`attempt_function` the innermost frame of
    the attempt's file in its traceback, `remote_traceback` the worker's formatted traceback (for --verbose).
    """

    remote_type = "Exception"
    remote_module = ""
    attempt_line: int | None = None
    attempt_function: str = ""
    raised_in_attempt: bool = True  # a raise statement of learner code, not torch, is the innermost frame
    remote_traceback: str = ""


_GARBLED = ("the process running your code sent something that is not an answer: did your code write into one "
            "of its file descriptors (the checks talk to it through one)?")


# --- stand-ins for the attempt's classes and exceptions --------------------------------------------------

_EXCEPTION_MIRRORS: dict[tuple[str, str], type] = {}
_SAFE_BUILTIN_EXCEPTIONS = {name for name in dir(builtins) if isinstance(getattr(builtins, name), type)
                            and issubclass(getattr(builtins, name), Exception)}


def exception_mirror(module: str, qualname: str, mro: list[str]) -> type:
    """A local exception class standing for the attempt's class `module.qualname` (same object every time).

    Its base is the first builtin Exception in the remote MRO (ValueError for a ValueError subclass), so
    `except ValueError` and `isinstance(e, NotImplementedError)` behave as they would in one process.
    SystemExit and KeyboardInterrupt are never re-raised here: they become plain RemoteErrors.
    """
    key = (module, qualname)
    if key not in _EXCEPTION_MIRRORS:
        base = next((getattr(builtins, name) for name in mro if name in _SAFE_BUILTIN_EXCEPTIONS), Exception)
        name = qualname.rsplit(".", 1)[-1]
        if module == "builtins" and name in _SAFE_BUILTIN_EXCEPTIONS:
            name = name  # a builtin exception keeps its name; the mirror subclasses it
        mirror = type(name, (RemoteError, base), {"remote_type": name, "remote_module": module, "__module__": module})
        _EXCEPTION_MIRRORS[key] = mirror
    return _EXCEPTION_MIRRORS[key]


class RemoteObject:
    """An object that lives in the worker (an instance of the attempt's class, a function it returned)."""

    def __init__(self, worker: "Worker", handle: int, cls_name: str, methods: tuple[str, ...] = ()) -> None:
        object.__setattr__(self, "_worker", worker)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_cls_name", cls_name)
        object.__setattr__(self, "_methods", frozenset(methods))
        weakref.finalize(self, worker.release, handle)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._worker.call(("handle", self._handle, None), args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name not in self._methods:
            raise AttributeError(f"{self._cls_name} object (in the process running your code) has no method {name!r}")
        return lambda *args, **kwargs: self._worker.call(("handle", self._handle, name), args, kwargs)

    def __repr__(self) -> str:
        return f"<{self._cls_name} object in the worker>"


def _forwarder(name: str) -> Callable:
    def method(self, *args: Any, **kwargs: Any) -> Any:
        return self._worker.call(("handle", self._handle, name), args, kwargs)

    method.__name__ = name
    return method


def class_mirror(worker: "Worker", info: dict) -> type:
    """A local class for the attempt's class: instances are RemoteObjects, methods forward to the worker, and
    torch base classes it derives from (e.g. OperatorSupportBase) are its bases here too."""
    import importlib

    bases: list[type] = []
    for module, qualname in info["bases"]:
        if not str(module).startswith("torch"):
            continue
        try:
            found: Any = importlib.import_module(str(module))
            for part in str(qualname).split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError):
            continue
        if isinstance(found, type) and found is not object and not any(issubclass(b, found) for b in bases):
            bases.append(found)
    methods = {name: _forwarder(name) for name in info["methods"] if not name.startswith("__")}
    if "__call__" in info["methods"]:
        methods["__call__"] = _forwarder("__call__")
    methods["__getattr__"] = RemoteObject.__getattr__
    methods["__repr__"] = RemoteObject.__repr__
    mirror = type(str(info["name"]), (RemoteObject, *bases), {**methods, "__module__": str(info["module"])})

    def construct(cls, *args: Any, **kwargs: Any) -> Any:
        return worker.call(("attr", info["name"], None), args, kwargs)

    mirror.__new__ = construct  # type: ignore[assignment]
    return mirror


# --- the module stand-in -------------------------------------------------------------------------------

class RemoteModule:
    """`ctx.attempt`: attribute access describes the attempt module's attribute in the worker."""

    def __init__(self, worker: "Worker") -> None:
        object.__setattr__(self, "_worker", worker)
        object.__setattr__(self, "_cache", {})

    @property
    def __file__(self) -> str:  # noqa: D401 - module protocol
        return str(self._worker.attempt_path)

    @property
    def __name__(self) -> str:
        return self._worker.module_name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        cache = self._cache
        if name not in cache:
            cache[name] = self._worker.describe(name)
        return cache[name]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("the attempt's module lives in another process; the checks cannot set its attributes")

    def __repr__(self) -> str:
        return f"<attempt module {self._worker.module_name!r} in the worker>"

    def probe_in_worker(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        """What Context.probe calls: run the trusted probe `fn` in the worker with the attempt module."""
        return self._worker.probe(fn, args, kwargs)


# --- the worker process --------------------------------------------------------------------------------

def _clean_environment() -> dict[str, str]:
    from checker.core.manifest import REPO_ROOT

    env = {k: v for k, v in os.environ.items() if not k.startswith("FX_KATAS_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
    env["PYTHONWARNINGS"] = "ignore"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def memory_limit_mb() -> int:
    """The worker's address-space limit in MiB (FX_KATAS_MEMORY_LIMIT_MB; 0 switches it off)."""
    try:
        return int(os.environ.get("FX_KATAS_MEMORY_LIMIT_MB", DEFAULT_MEMORY_LIMIT_MB))
    except ValueError:
        return DEFAULT_MEMORY_LIMIT_MB


class _ForkedProcess:
    """The part of subprocess.Popen's interface Worker uses, for a worker made with os.fork()."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere (the checks process reaps what it kills)
                self.returncode = -signal.SIGKILL
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
            time.sleep(0.01)
        return self.returncode  # type: ignore[return-value]

    def kill(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)


def _fork_worker(sock_fd: int, output_fd: int, cwd: Path, sandbox: "Sandbox | None" = None) -> _ForkedProcess:
    """Fork the worker from this (torch-importing, checks-free) process; the child never returns here.
    With a sandbox of mode "user", the child becomes the attempt's unprivileged user before it serves."""
    pid = os.fork()
    if pid:
        return _ForkedProcess(pid)
    code = 1
    try:
        from checker.attempt.worker import run_forked

        code = run_forked(sock_fd, output_fd, cwd, memory_limit_mb(), sandbox)
    finally:
        os._exit(code)


def _graph_for_service(value: Any) -> Any:
    """A graph the worker sent to a service (the simulated NPU's compile), rebuilt here from torch's own ops, or
    the GraphRebuildError saying why it cannot be: a service never handles a graph's description itself."""
    if isinstance(value, RemoteRecord) and getattr(value, "_cls_name", "") == "GraphDescription":
        from checker.channel.graphs import GraphRebuildError, graph_module_from

        try:
            return graph_module_from(value.description)
        except GraphRebuildError as error:
            return error
    return value


class Worker:
    """One worker process running the attempt, and the trusted end of its channel.

    `services` answers requests the worker makes while it works (the simulated NPU's compile and launch):
    name -> function(*plain args) -> value sent back.
    """

    def __init__(self, attempt_path: Path, module_name: str, *, services: dict[str, Callable] | None = None) -> None:
        self.attempt_path = Path(attempt_path).resolve()
        self.module_name = module_name
        self.services = dict(services or {})
        self.setup: list[str] = []  # "module:function"s the worker calls with its service transport first
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.hello: dict = {}
        self._graphs: "weakref.WeakKeyDictionary[Any, tuple[int, str]]" = weakref.WeakKeyDictionary()
        self._keys = iter(range(1, 1 << 62))
        self._released: list[int] = []
        self._fd_output: collections.deque[str] = collections.deque()
        self._fd_output_size = 0
        self._fd_dropped = 0
        self._lock = threading.Lock()
        self.outputs: list[str] = []  # what the attempt printed during each call since the list was cleared
        self.sandboxed = False  # started by bubblewrap (checker/attempt/sandbox.py), which reports a signal as 128 + N

    # -- lifetime

    def spawn(self) -> None:
        """Start the worker process, which then waits for `load`.

        Where fork() exists the worker is forked from this process once it has imported torch (call this
        before loading the checks or the reference: the worker gets a copy of this process's memory, and
        it should hold nothing but torch and katas.common); elsewhere it is a fresh interpreter."""
        from checker.attempt.sandbox import Sandbox

        sandbox = Sandbox.from_env()  # set by `checker grade` (checker/attempt/sandbox.py)
        trusted_end, worker_end = wire.socket_pair()
        read_fd, write_fd = os.pipe()
        try:
            cmd = [sys.executable, "-m", "checker.attempt.worker", "--fd", str(worker_end.fileno()),
                   "--memory-limit-mb", str(memory_limit_mb())]
            self.sandboxed = sandbox is not None and sandbox.mode == "namespace"
            if self.sandboxed:  # bubblewrap needs a program to start: the worker is a fresh interpreter inside it
                cmd = sandbox.worker_command(cmd, self.attempt_path.parent)
            if hasattr(os, "fork") and "torch" in sys.modules and (sandbox is None or sandbox.mode != "namespace"):
                self.proc = _fork_worker(worker_end.fileno(), write_fd, self.attempt_path.parent, sandbox)
            else:
                self.proc = subprocess.Popen(cmd, pass_fds=(worker_end.fileno(),), stdin=subprocess.DEVNULL,
                                             stdout=write_fd, stderr=write_fd, env=_clean_environment(),
                                             cwd=self.attempt_path.parent)
        finally:
            worker_end.close()
            os.close(write_fd)
        self.sock = trusted_end
        threading.Thread(target=self._drain, args=(read_fd,), daemon=True, name="worker-output").start()

    def load(self) -> dict:
        """Import the attempt in the worker: {"ok": True} or {"ok": False, "error": {...}} (import failed)."""
        wire.send_frame(self.sock, wire.REQUEST, wire.dump_trusted(
            {"op": "load", "attempt": str(self.attempt_path), "module_name": self.module_name, "setup": self.setup}))
        while True:  # the setup functions may ask for services before the attempt is imported
            kind, payload = self._recv()
            if kind != wire.REQUEST:
                break
            self._serve(payload)
        if kind != wire.HELLO:
            raise ProtocolError("the worker did not answer the load request")
        self.hello = from_plain(self._load(payload))
        self.outputs.append(str(self.hello.get("output", "")))
        return self.hello

    def start(self) -> dict:
        self.spawn()
        return self.load()

    def restart(self) -> dict:
        """A fresh worker after the last one died; the attempt is imported again. Graphs are uploaded anew."""
        self.stop()
        self._graphs = weakref.WeakKeyDictionary()
        self._released.clear()
        return self.start()

    def _drain(self, fd: int) -> None:
        """Keep the last MAX_FD_OUTPUT characters the worker wrote to its file descriptors; drop the rest,
        reading on so that a flood never blocks the worker or fills memory here."""
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while True:
                chunk = pipe.read(65536)
                if not chunk:
                    return
                text = chunk.decode("utf-8", errors="replace")
                with self._lock:
                    self._fd_output.append(text)
                    self._fd_output_size += len(text)
                    while self._fd_output_size > MAX_FD_OUTPUT and len(self._fd_output) > 1:
                        dropped = self._fd_output.popleft()
                        self._fd_output_size -= len(dropped)
                        self._fd_dropped += len(dropped)

    def take_fd_output(self) -> str:
        with self._lock:
            text = "".join(self._fd_output)
            if self._fd_dropped:
                text = f"[… {self._fd_dropped} characters of output dropped …]\n" + text
            self._fd_output.clear()
            self._fd_output_size = self._fd_dropped = 0
        return text

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def attempt_frame(self, wait: float = 1.0) -> str | None:
        """Where the attempt's code is running right now, as "file.py:12 in fn()" (its innermost frame in the
        attempt's file), or None: asks the worker for its stacks (checker/attempt/worker.py, STACK_SIGNAL) and reads
        them from its output. Not for a worker in bubblewrap: the signal would reach bubblewrap, not Python."""
        import re
        import signal as signals

        from checker.attempt.worker import STACK_SIGNAL

        if not self.alive() or self.sandboxed:
            return None
        with self._lock:
            before = "".join(self._fd_output)
        try:
            os.kill(self.proc.pid, getattr(signals, STACK_SIGNAL))
        except (ProcessLookupError, AttributeError):
            return None
        frame = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<fn>\S+)', re.MULTILINE)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            time.sleep(0.05)
            with self._lock:
                text = "".join(self._fd_output)
            dump = text[len(before):] if text.startswith(before) else text
            for found in frame.finditer(dump):
                if Path(found["file"]).resolve() == self.attempt_path:
                    return f"{self.attempt_path.name}:{found['line']} in {found['fn']}()"
        return None

    def stop(self) -> None:
        """End the worker and everything it started that is still in its process group."""
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
        if self.proc is not None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass

    def exit_description(self) -> str:
        """How the worker ended, in words."""
        code = None
        if self.proc is not None:
            try:
                code = self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                code = None
        if code is None:
            return "the process running your code stopped answering"
        if code > 128 and self.sandboxed:  # bubblewrap passes on a signal's death as 128 + its number
            code = 128 - code
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            if -code == signal.SIGKILL:
                return f"the process running your code was killed by {name} (out of memory, or killed from outside)"
            return f"the process running your code was killed by {name}"
        return f"the process running your code exited with code {code} (sys.exit or os._exit in your code?)"

    # -- the channel

    def _recv(self) -> tuple[bytes, bytes]:
        try:
            kind, payload = wire.recv_frame(self.sock, wire.MAX_WORKER_FRAME)
        except (wire.ChannelClosed, ConnectionError, OSError):
            raise WorkerDied(self.exit_description()) from None
        except wire.FrameTooLarge as error:
            self.stop()
            raise ProtocolError(f"{_GARBLED} ({error})") from None
        if kind not in (wire.REPLY, wire.REQUEST, wire.HELLO):
            self.stop()
            raise ProtocolError(_GARBLED)
        return kind, payload

    def _load(self, payload: bytes) -> Any:
        """Read a frame's payload; anything unreadable breaks the channel."""
        try:
            return wire.load_plain(payload)
        except Exception:  # noqa: BLE001 - whatever the bytes were, they were not an answer
            self.stop()
            raise ProtocolError(_GARBLED) from None

    def request(self, message: dict) -> Any:
        """Send `message`, serve the worker's own requests meanwhile, return the decoded reply."""
        if not self.alive():
            raise WorkerDied(self.exit_description())
        if self._released:
            message = {**message, "release": self._released[:]}
            self._released.clear()
        try:
            wire.send_frame(self.sock, wire.REQUEST, wire.dump_trusted(message))
        except (ConnectionError, OSError):
            raise WorkerDied(self.exit_description()) from None
        while True:
            kind, payload = self._recv()
            if kind == wire.REPLY:
                return self._load(payload)
            if kind == wire.REQUEST:
                self._serve(payload)
            else:
                self.stop()
                raise ProtocolError(_GARBLED)

    def _serve(self, payload: bytes) -> None:
        request = from_plain(self._load(payload))
        name = request.get("service") if isinstance(request, dict) else None
        try:
            service = self.services[name]
        except (KeyError, TypeError):
            reply = {"ok": False, "error": f"no service {name!r}"}
        else:
            try:
                reply = {"ok": True, "value": service(*map(_graph_for_service, request.get("args", ())))}
            except Exception as error:  # noqa: BLE001 - the worker's request failed; tell it why
                reply = {"ok": False, "error": f"{type(error).__name__}: {error}", "type": type(error).__name__}
        wire.send_frame(self.sock, wire.REPLY, wire.dump_trusted(reply))

    def release(self, handle: int) -> None:
        self._released.append(handle)

    # -- calls

    def describe(self, name: str) -> Any:
        info = from_plain(self.request({"op": "describe", "name": name}), self._handle)
        kind = info["kind"]
        if kind == "missing":
            raise AttributeError(f"your {self.attempt_path.name} has no {name!r}")
        if kind == "function":
            return RemoteFunction(self, name)
        if kind == "class":
            return class_mirror(self, info)
        if kind == "exception_class":
            return exception_mirror(info["module"], info["qualname"], info["mro"])
        if kind == "enum_class":
            return types.SimpleNamespace(**{member: RemoteEnumMember(info["name"], member, value)
                                            for member, value in info["members"]})
        if kind == "value":
            return info["value"]
        return RemoteObject(self, -1, str(info.get("type", "object")))

    def call(self, target: tuple, args: tuple, kwargs: dict) -> Any:
        tracked: dict[int, Any] = {}
        uploads: dict[int, Any] = {}
        message = {"op": "call", "target": target,
                   "args": self._outgoing(args, tracked, uploads), "kwargs": self._outgoing(kwargs, tracked, uploads)}
        message["uploads"] = uploads
        reply = self.request(message)
        return self._settle(reply, tracked)

    def probe(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        tracked: dict[int, Any] = {}
        uploads: dict[int, Any] = {}
        message = {"op": "probe", "file": fn.__code__.co_filename, "module": fn.__module__, "name": fn.__qualname__,
                   "args": self._outgoing(args, tracked, uploads), "kwargs": self._outgoing(kwargs, tracked, uploads),
                   "uploads": uploads}
        return self._settle(self.request(message), tracked)

    def _settle(self, reply: Any, tracked: dict[int, Any]) -> Any:
        from checker.channel.graphs import apply_description, graph_fingerprint

        reply = from_plain(reply, self._handle)
        if not isinstance(reply, dict) or "ok" not in reply:
            raise ProtocolError("a malformed answer from the process running your code")
        self.outputs.append(str(reply.get("output", ""))[-4000:])
        for key, description in (reply.get("mutated") or {}).items():
            gm = tracked.get(key)
            if gm is not None:
                apply_description(gm, description)
                self._graphs[gm] = (key, graph_fingerprint(gm))
        if reply["ok"]:
            return reply.get("value")
        raise self.exception(reply["error"])

    def exception(self, error: dict) -> RemoteError:
        """The local stand-in for an exception the worker described."""
        mirror = exception_mirror(str(error["module"]), str(error["qualname"]), [str(n) for n in error["mro"]])
        exc = mirror(str(error["message"]))
        exc.attempt_line = error.get("line") if isinstance(error.get("line"), int) else None
        exc.attempt_function = str(error.get("function") or "")
        exc.raised_in_attempt = bool(error.get("raised_here", True))
        exc.remote_traceback = str(error.get("traceback", ""))[-8000:]
        return exc

    def _handle(self, data: dict) -> Any:
        handle, cls_name = int(data["id"]), str(data["cls"])
        methods = tuple(str(m) for m in data.get("methods", ()))
        return RemoteObject(self, handle, cls_name, methods)

    def _outgoing(self, value: Any, tracked: dict[int, Any], uploads: dict[int, Any]) -> Any:
        """`value` ready for the worker: graphs as references (uploaded when the worker's copy is stale),
        nodes and submodules of those graphs as references, RemoteObjects as their handles."""
        import torch

        if isinstance(value, torch.fx.GraphModule):
            return GraphRef(self._graph_key(value, tracked, uploads))
        if isinstance(value, torch.fx.Node):
            gm = value.graph.owning_module
            if gm is None:
                raise TypeError(f"node {value.name} belongs to no GraphModule")
            return NodeRef(self._graph_key(gm, tracked, uploads), value.name)
        if isinstance(value, RemoteObject):
            return HandleRef(object.__getattribute__(value, "_handle"))
        if isinstance(value, torch.nn.Module):
            for key, gm in tracked.items():
                for name, module in gm.named_modules():
                    if module is value:
                        return ModuleRef(key, name)
            return value
        if isinstance(value, (list, tuple)):
            items = [self._outgoing(v, tracked, uploads) for v in value]
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, dict):
            return {k: self._outgoing(v, tracked, uploads) for k, v in value.items()}
        return value

    def _graph_key(self, gm: Any, tracked: dict[int, Any], uploads: dict[int, Any]) -> int:
        from checker.channel.graphs import graph_fingerprint

        for key, seen in tracked.items():  # already sent in this call (a node of it, and the module itself)
            if seen is gm:
                return key
        fingerprint = graph_fingerprint(gm)
        known = self._graphs.get(gm)
        if known is not None and known[1] == fingerprint:
            key = known[0]
        else:
            key = known[0] if known is not None else next(self._keys)
            uploads[key] = gm
            self._graphs[gm] = (key, fingerprint)
        tracked[key] = gm
        return key


class RemoteFunction:
    """A function of the attempt's module: calling it calls it in the worker."""

    def __init__(self, worker: Worker, name: str) -> None:
        self._worker, self.__name__ = worker, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._worker.call(("attr", self.__name__, None), args, kwargs)

    def __repr__(self) -> str:
        return f"<function {self.__name__} of the attempt, in the worker>"
