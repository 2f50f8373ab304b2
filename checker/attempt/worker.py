"""The worker: the one process that runs the attempt's code (`python -m checker.attempt.worker ...`).

Started by the trusted checks process (checker/trusted/stand_ins.py) with one end of a socket and nothing else of its:
not the results channel, not the checks, not the reference. Before it imports the attempt it

* stops other processes of the same user from being traced by it: as root it drops every capability
  (so the non-dumpable trusted process is out of reach of ptrace and /proc/<pid>/{mem,fd,environ});
* limits its own address space (RLIMIT_AS, soft and hard), so a runaway allocation fails here;
* makes itself the reaper of any process it orphans, and kills its process group on exit.

Then it answers requests: describe an attribute of the attempt module, call one of its functions (or a method
of an object it returned earlier), run a trusted probe function with the attempt as argument. Every answer is
plain data (checker/channel/wire.py). What the attempt prints during a call is captured, capped, and sent with the
answer; output written straight to file descriptors goes to a pipe the trusted side drains and caps.
"""
from __future__ import annotations

import argparse
import ctypes
import enum
import importlib
import inspect
import io
import os
import resource
import socket
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from checker.core.modules import load_module

MAX_CALL_OUTPUT = 4000  # characters of what the attempt printed during one call, kept for the report

_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECUREBITS = 28
_SECBIT_NOROOT_AND_LOCKS = 0x3 | 0xC | 0x30  # NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED, all locked


def drop_privileges() -> str:
    """Set no_new_privs (kept by every process the attempt starts, for good: the checker recognises them by it,
    see checker/run/warm.py) and, as root, give up every capability, for good (exec included). Returns what was
    done, for --verbose."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux
        return "no prctl here: nothing done"
    if os.geteuid() != 0:
        return "not root: no capability to drop"
    for cap in range(64):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(_PR_SET_SECUREBITS, _SECBIT_NOROOT_AND_LOCKS, 0, 0, 0)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header = Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (Data * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        return f"capset failed (errno {ctypes.get_errno()})"
    return "capabilities dropped"


def limit_memory(megabytes: int) -> None:
    if megabytes > 0:
        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


class _CappedText(io.TextIOBase):
    """A stdout/stderr that keeps the last MAX_CALL_OUTPUT characters and counts the rest."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        text = str(text)
        self.parts.append(text)
        self.size += len(text)
        while self.size > MAX_CALL_OUTPUT and len(self.parts) > 1:
            gone = self.parts.pop(0)
            self.size -= len(gone)
            self.dropped += len(gone)
        if self.size > 4 * MAX_CALL_OUTPUT:  # one huge write
            joined = "".join(self.parts)
            self.dropped += len(joined) - MAX_CALL_OUTPUT
            self.parts, self.size = [joined[-MAX_CALL_OUTPUT:]], MAX_CALL_OUTPUT
        return len(text)

    def take(self) -> str:
        text = "".join(self.parts)
        if self.dropped:
            text = f"[… {self.dropped} characters of output dropped …]\n" + text
        self.parts, self.size, self.dropped = [], 0, 0
        return text


def attempt_frame(exc: BaseException, attempt_path: Path) -> tuple[int | None, str]:
    """(line, function) of the innermost frame of the attempt's file in `exc`'s traceback."""
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).resolve() == attempt_path:
        return exc.lineno, ""
    found: tuple[int | None, str] = (None, "")
    for frame in traceback.extract_tb(exc.__traceback__):
        try:
            if Path(frame.filename).resolve() == attempt_path:
                found = (frame.lineno, frame.name)
        except OSError:
            continue
    return found


def raised_in_attempt(exc: BaseException, attempt_path: Path) -> bool:
    """Whether learner code raised `exc` itself: the innermost frame of its traceback is a `raise` statement of a
    file outside the installed packages and the standard library (the attempt, or a stub of another kata it calls),
    not a line that called into torch, which raised."""
    import sysconfig

    frames = traceback.extract_tb(exc.__traceback__)
    if not frames or not (frames[-1].line or "").lstrip().startswith("raise"):
        return False
    installed = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    return not any(frames[-1].filename.startswith(path + "/") for path in installed)


def describe_exception(exc: BaseException, attempt_path: Path) -> dict:
    line, function = attempt_frame(exc, attempt_path)
    cls = type(exc)
    message = exc.msg if isinstance(exc, SyntaxError) and exc.msg else str(exc)
    return {"module": cls.__module__, "qualname": cls.__qualname__, "mro": [c.__name__ for c in cls.__mro__],
            "message": message[:4000], "line": line, "function": function,
            "raised_here": raised_in_attempt(exc, attempt_path),
            "traceback": "".join(traceback.format_exception(exc))[-8000:]}


class Server:
    """Answers the trusted side's requests for one attempt module."""

    def __init__(self, sock: socket.socket, attempt: ModuleType, attempt_path: Path) -> None:
        self.sock = sock
        self.attempt = attempt
        self.attempt_path = attempt_path
        self.objects: dict[int, Any] = {}
        self.next_handle = 1
        self.graphs: dict[int, Any] = {}
        # per graph: its fingerprint when the trusted side last saw it, and its nodes by name (both kept until a
        # call changes the graph), so that a call with a node argument does not walk the graph twice more
        self.synced: dict[int, str] = {}
        self.nodes_by_name: dict[int, dict[str, Any]] = {}
        self.probe_modules: dict[str, ModuleType] = {}

    # -- replies

    def handle_of(self, obj: Any) -> dict:
        handle = self.next_handle
        self.next_handle += 1
        self.objects[handle] = obj
        cls = type(obj)
        methods = [name for name in dir(cls) if callable(getattr(cls, name, None)) and not name.startswith("_")]
        if callable(obj):
            methods.append("__call__")
        return {"id": handle, "cls": cls.__qualname__, "methods": methods}

    def plain(self, value: Any) -> Any:
        from checker.channel.graphs import describe_graph
        from checker.channel.wire import to_plain

        return to_plain(value, handle_of=self.handle_of, describe_graph=describe_graph)

    # -- requests

    def serve(self) -> None:
        from checker.channel import wire

        while True:
            try:
                kind, payload = wire.recv_frame(self.sock)
            except (wire.ChannelClosed, ConnectionError, OSError):
                return
            if kind != wire.REQUEST:
                continue
            reply = self.answer(wire.load_trusted(payload))
            try:
                data = self.plain(reply)
            except Exception as exc:  # noqa: BLE001 - an answer that cannot be sent is the attempt's doing
                data = self.plain({"ok": False, "error": describe_exception(exc, self.attempt_path),
                                   "output": reply.get("output", "")})
            wire.send_frame(self.sock, wire.REPLY, wire.dump_plain(data))

    def answer(self, request: dict) -> dict:
        """The reply to one request, as Python values (`serve` makes them plain)."""
        for handle in request.get("release", ()):
            self.objects.pop(handle, None)
        op = request.get("op")
        if op == "describe":
            return self.describe(request["name"])
        if op in ("call", "probe"):
            return self.call(request)
        return {"ok": False, "error": describe_exception(RuntimeError(f"unknown request {op!r}"), self.attempt_path)}

    def describe(self, name: str) -> dict:
        if not hasattr(self.attempt, name):
            return {"kind": "missing"}
        value = getattr(self.attempt, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            return {"kind": "exception_class", "module": value.__module__, "qualname": value.__qualname__,
                    "mro": [c.__name__ for c in value.__mro__]}
        if isinstance(value, type) and issubclass(value, enum.Enum):
            return {"kind": "enum_class", "name": value.__name__,
                    "members": [[member.name, member.value] for member in value]}
        if isinstance(value, type):
            methods = [n for n in dir(value) if not n.startswith("_") and callable(getattr(value, n, None))]
            if callable(getattr(value, "__call__", None)) and "__call__" in vars(value):
                methods.append("__call__")
            return {"kind": "class", "name": value.__name__, "module": value.__module__,
                    "bases": [[c.__module__, c.__qualname__] for c in value.__mro__[1:]], "methods": methods}
        if inspect.isroutine(value) or callable(value):
            return {"kind": "function"}
        try:
            from checker.channel.wire import to_plain

            to_plain(value)  # can it be sent as data?
        except (TypeError, ValueError):
            return {"kind": "object", "type": type(value).__name__}
        return {"kind": "value", "value": value}

    def resolve(self, value: Any, fresh: dict[int, Any]) -> Any:
        """Turn the trusted side's references back into this process's objects."""
        from checker.channel import wire

        if isinstance(value, wire.GraphRef):
            return self.graphs[value.key]
        if isinstance(value, wire.NodeRef):
            graph = self.graphs[value.key].graph
            node = self.nodes_by_name.get(value.key, {}).get(value.name)
            if node is None or node.graph is not graph or node._erased:  # the attempt changed the graph meanwhile
                self.nodes_by_name[value.key] = {n.name: n for n in graph.nodes}
                node = self.nodes_by_name[value.key][value.name]
            return node
        if isinstance(value, wire.ModuleRef):
            return self.graphs[value.key].get_submodule(value.name)
        if isinstance(value, wire.HandleRef):
            return self.objects[value.handle]
        if isinstance(value, list):
            return [self.resolve(v, fresh) for v in value]
        if isinstance(value, tuple):
            return tuple(self.resolve(v, fresh) for v in value)
        if isinstance(value, dict):
            return {k: self.resolve(v, fresh) for k, v in value.items()}
        return value

    def callee(self, request: dict) -> Any:
        if request["op"] == "probe":
            path = request["file"]
            if path not in self.probe_modules:
                self.probe_modules[path] = load_module(Path(path), request["module"])
            function: Any = self.probe_modules[path]
            for part in request["name"].split("."):
                function = getattr(function, part)
            return lambda *args, **kwargs: function(self.attempt, *args, **kwargs)
        where, name, method = request["target"]
        obj = getattr(self.attempt, name) if where == "attr" else self.objects[name]
        return obj if method is None else getattr(obj, method)

    def call(self, request: dict) -> dict:
        from checker.channel.graphs import attribute_ids, describe_graph
        from checker.channel.graphs import graph_fingerprint

        for key, gm in request.get("uploads", {}).items():
            gm.recompile()  # an unpickled GraphModule has no forward until its code is generated
            self.graphs[key] = gm
            self.synced[key] = graph_fingerprint(gm)
            self.nodes_by_name.pop(key, None)
        used = {key: self.graphs[key] for key in _graph_keys((request["args"], request["kwargs"]))}
        before = {key: (self.synced.get(key) or graph_fingerprint(gm), attribute_ids(gm)) for key, gm in used.items()}
        captured = _CappedText()
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = captured
        try:
            args = self.resolve(request["args"], {})
            kwargs = self.resolve(request["kwargs"], {})
            value = self.callee(request)(*args, **kwargs)
            reply: dict = {"ok": True, "value": value}
        except BaseException as exc:  # noqa: BLE001 - the attempt may raise anything, SystemExit included
            reply = {"ok": False, "error": describe_exception(exc, self.attempt_path)}
        finally:
            sys.stdout, sys.stderr = saved
        mutated = {}
        for key, gm in used.items():
            now = graph_fingerprint(gm)
            if now != before[key][0]:
                self.synced[key] = now
                self.nodes_by_name.pop(key, None)
                try:
                    mutated[key] = describe_graph(gm, before=before[key][1])
                except Exception as exc:  # noqa: BLE001 - a graph that cannot be described is the attempt's doing
                    reply = {"ok": False, "error": describe_exception(exc, self.attempt_path)}
        reply["mutated"] = mutated
        reply["output"] = captured.take()
        return reply


def _graph_keys(value: Any) -> set[int]:
    from checker.channel import wire

    if isinstance(value, (wire.GraphRef, wire.NodeRef, wire.ModuleRef)):
        return {value.key}
    if isinstance(value, (list, tuple)):
        return set().union(*(_graph_keys(v) for v in value)) if value else set()
    if isinstance(value, dict):
        return set().union(*(_graph_keys(v) for v in value.values())) if value else set()
    return set()


# --- the worker's requests to the trusted side (services such as the simulated NPU) ----------------------

CHANNEL: socket.socket | None = None


def request_service(name: str, *args: Any) -> Any:
    """Ask the trusted side's service `name` (e.g. the NPU) and wait for its answer. Only in a worker."""
    from checker.channel import wire

    from checker.channel.graphs import describe_graph

    if CHANNEL is None:
        raise RuntimeError("not running in a worker")
    request = wire.to_plain({"service": name, "args": list(args)}, describe_graph=describe_graph)
    wire.send_frame(CHANNEL, wire.REQUEST, wire.dump_plain(request))
    kind, payload = wire.recv_frame(CHANNEL)
    reply = wire.load_trusted(payload)
    if not reply.get("ok"):
        raise ServiceError(reply.get("error", "the service failed"), reply.get("type", ""))
    return reply["value"]


class ServiceError(RuntimeError):
    def __init__(self, message: str, type_name: str = "") -> None:
        super().__init__(message)
        self.type_name = type_name


def load_attempt(request: dict) -> tuple[ModuleType | None, dict]:
    """Import the attempt named by the trusted side's first request; (module, hello) or (None, why not)."""
    attempt_path = Path(request["attempt"]).resolve()
    sys.path.insert(0, str(attempt_path.parent))  # an attempt may import a helper module beside it
    captured = _CappedText()
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = captured
    try:
        attempt, hello = load_module(attempt_path, request["module_name"]), {"ok": True}
    except BaseException as exc:  # noqa: BLE001 - report any import failure, SystemExit included
        attempt, hello = None, {"ok": False, "error": describe_exception(exc, attempt_path)}
    finally:
        sys.stdout, sys.stderr = saved
    hello["output"] = captured.take()
    return attempt, hello


def run_forked(sock_fd: int, output_fd: int, cwd: Path, memory_limit_mb: int, sandbox: Any = None) -> int:
    """The worker, forked from the checks process right after it imported torch (checker/trusted/stand_ins.py): keep
    only the channel and the output pipe of what that process had open, become the attempt's user when
    `sandbox` (a checker.attempt.sandbox.Sandbox of mode "user") says so, then serve as `main` does."""
    import signal

    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    keep = {0, 1, 2, sock_fd}
    for entry in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else []:
        fd = int(entry)
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)
    sys.stdout, sys.stderr, sys.stdin = sys.__stdout__, sys.__stderr__, sys.__stdin__
    sys.argv = ["checker.attempt.worker"]
    for name in [n for n in os.environ if n.startswith("FX_KATAS_")]:
        del os.environ[name]
    os.chdir(cwd)
    if sandbox is not None:
        sandbox.become_attempt_user()
    return serve(socket.socket(fileno=sock_fd), memory_limit_mb)


def main(argv: list[str] | None = None) -> int:
    """`python -m checker.attempt.worker`: the worker as a fresh interpreter (where fork() is missing)."""
    parser = argparse.ArgumentParser(prog="python -m checker.attempt.worker")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--memory-limit-mb", type=int, default=0)
    args = parser.parse_args(argv)
    return serve(socket.socket(fileno=args.fd), args.memory_limit_mb)


STACK_SIGNAL = "SIGUSR1"


def _stack_on_request() -> None:
    """Write every thread's Python stack to the worker's output when the checks process sends STACK_SIGNAL: a
    check stopped for running too long then says where the attempt was (checker/trusted/checks_process.py,
    CheckClock). An attempt that takes the signal over only loses that line of its own message."""
    import faulthandler
    import signal

    try:
        faulthandler.register(getattr(signal, STACK_SIGNAL), file=sys.__stderr__, all_threads=True)
    except (AttributeError, ValueError, OSError):  # no such signal here, or no usable stderr
        pass


def serve(sock: socket.socket, memory_limit_mb: int) -> int:
    """Harden this process, then wait for the attempt to load: the checks process starts the worker early
    but names the attempt only once the checks and the reference are loaded, so nothing the attempt does at
    import can reach them. Then answer requests until the channel closes."""
    global CHANNEL
    CHANNEL = sock
    sys.modules.setdefault("checker.attempt.worker", sys.modules[__name__])
    sys.modules["checker.attempt.worker"].CHANNEL = sock  # `python -m checker.attempt.worker` runs as __main__
    drop_privileges()
    limit_memory(memory_limit_mb)
    _stack_on_request()
    import warnings

    warnings.simplefilter("ignore")
    import torch  # noqa: F401 - imported before the attempt, so its start-up is not the attempt's

    from checker.core.processes import skip_guard_latency_probe

    skip_guard_latency_probe()

    from checker.channel import wire
    import katas.common  # noqa: F401 - registers kata::linear_gelu, as in the trusted process

    try:
        kind, payload = wire.recv_frame(sock)
    except (wire.ChannelClosed, ConnectionError, OSError):
        return 0
    request = wire.load_trusted(payload)
    for name in request.get("setup", ()):
        module_name, _, function = name.partition(":")
        getattr(importlib.import_module(module_name), function)(request_service)
    attempt, hello = load_attempt(request)
    wire.send_frame(sock, wire.HELLO, wire.dump_plain(wire.to_plain(hello)))
    if attempt is not None:
        Server(sock, attempt, Path(request["attempt"]).resolve()).serve()
    return 0


if __name__ == "__main__":
    code = 1
    try:
        code = main()
    except BaseException:  # the checks process reads this from the worker's output
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
