"""Probes for kata 2's checks: everything that runs the attempt's code inside torch machinery.

A probe takes the attempt module and plain data -- a hidden suspect's name, which state to set up, input
tensors -- and returns plain data: the finder's answer as (filename, lineno, reason) records, snapshots of
Python's and torch's logging state as dicts, how many graphs a fix compiled into and which ops they hold, the
fix's output tensor, an exception as its type and message. checks.py compares that data with the hand-written
truth (the `# BREAK` annotations of suspects_hidden.py and helpers_hidden.py) and with the given suspects run
eagerly. Nothing here asserts or knows what a right answer is.

An exception the attempt raises that no probe expects (NotImplementedError from the stub, a bug) propagates,
so the checker reports it at the attempt's own file and line. Probes run under `quiet()`: the suspects print
and warn, and torch prints hints; none of it belongs in the learner's report.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import os
import re
import sys
import types
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import torch
import torch._dynamo
import torch._logging

from katas.common.quiet import quiet

HIDDEN_DIR = Path(__file__).resolve().parent
KATA_DIR = HIDDEN_DIR.parent


def _module(path: Path, name: str) -> ModuleType:
    """The module at `path`, loaded once under `name` (kata folders are not packages). checks.py loads the
    same files under the same names, so when probes run in the checks' own process they share the objects."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


SUSPECTS = _module(KATA_DIR / "suspects.py", "suspects")  # the name hunt.py's `import suspects` uses
HIDDEN = _module(HIDDEN_DIR / "suspects_hidden.py", "kata02_suspects_hidden")

# Config flags that make Dynamo capture more: a fix must not depend on them (they change every compile in the
# process), so fixes are compiled with their defaults whatever the attempt set.
DEFAULT_CAPTURE_CONFIG = {"capture_scalar_outputs": False, "capture_dynamic_output_shape_ops": False}


# --- the finder -------------------------------------------------------------------------------------------

def answer(result: Any) -> dict:
    """What `find_graph_breaks` returned, as data: its type and, per item, the three fields when they have
    the promised types (None where they do not) and the item's repr for messages."""
    items = []
    if isinstance(result, list):
        for item in result:
            fields = {name: getattr(item, name, None) for name in ("filename", "lineno", "reason")}
            items.append({
                "filename": fields["filename"] if isinstance(fields["filename"], str) else None,
                "lineno": fields["lineno"] if isinstance(fields["lineno"], int)
                and not isinstance(fields["lineno"], bool) else None,
                "reason": fields["reason"] if isinstance(fields["reason"], str) else None,
                "repr": repr(item)[:300],
            })
    return {"type": type(result).__name__, "items": items}


def _add_one(x: torch.Tensor) -> torch.Tensor:
    return x + 1


_SETTLED: list = []  # non-empty once this process has compiled for settle_logging


def settle_logging() -> None:
    """One small compile, so that what torch's logging does by itself on a process's first compiles has been
    done before a snapshot: its lazy trace handler on `torch.__trace` removes itself at the first structured
    event when TORCH_TRACE is unset, which is no finder's doing. The compile runs once per process; torch.__trace
    gets its lazy handler back from every set_logs(), so that one is removed on every call."""
    if not _SETTLED:
        with quiet():
            torch._dynamo.reset()
            torch.compile(_add_one, backend="eager")(torch.zeros(2))
        _SETTLED.append(True)
    # The compile does not reach that handler when the user's level on torch.__trace is above DEBUG; it would
    # then remove itself during the finder's call. Without TORCH_TRACE (no folder to write to) it is removed here.
    from torch._logging import _internal

    lazy = getattr(_internal, "LOG_TRACE_HANDLER", None)
    if lazy is not None and getattr(lazy, "root_dir", "") is None:
        logging.getLogger("torch.__trace").removeHandler(lazy)


def probe_find(attempt: ModuleType, case_name: str, before: str = "reset") -> dict:
    """The attempt's `find_graph_breaks` on hidden case `case_name`, called with the case's positional and
    keyword arguments. `before` is what happens first: "reset" (torch._dynamo.reset(), so the check sees the
    finder on its own), "compiled" (reset, then the case's function compiled and run with backend="eager",
    as a user would have done), or "nothing" (right after the previous call)."""
    case = HIDDEN.CASES[case_name]
    if before in ("reset", "compiled"):
        torch._dynamo.reset()
    if before == "compiled":
        with quiet():
            torch.compile(case.fn, backend="eager")(*case.make_args(), **case.make_kwargs())
    with quiet():
        result = attempt.find_graph_breaks(case.fn, *case.make_args(), **case.make_kwargs())
    return answer(result)


# --- logging state ----------------------------------------------------------------------------------------

def _describe(obj: Any) -> str:
    """A handler or filter by class and identity (and a handler's level and own filters), so that a removed and
    re-created one, or a changed one, reads as different."""
    text = f"{type(obj).__qualname__}@{id(obj):#x}"
    if isinstance(obj, logging.Handler):
        text += f"(level={obj.level}, filters={[f'{type(f).__qualname__}@{id(f):#x}' for f in obj.filters]})"
    return text


def _torch_loggers() -> dict[str, logging.Logger]:
    loggers = {"(root)": logging.root}
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if name.startswith("torch") and isinstance(logger, logging.Logger):
            loggers[name] = logger
    return loggers


def logging_snapshot() -> dict:
    """Everything about torch's logging a finder could change, as data: every `torch*` logger's (and the root
    logger's) level, propagate, disabled, handlers and filters; torch._logging's own record of what was switched
    on (`_internal.log_state`, which set_logs rebuilds); and logging.disable's threshold."""
    from torch._logging import _internal

    loggers = {
        name: {"level": logger.level, "propagate": logger.propagate, "disabled": logger.disabled,
               "handlers": [_describe(h) for h in logger.handlers], "filters": [_describe(f) for f in logger.filters]}
        for name, logger in _torch_loggers().items()
    }
    state = _internal.log_state
    return {
        "loggers": loggers,
        "torch_logs": {"levels": {k: str(v) for k, v in sorted(state.log_qname_to_level.items())},
                       "artifacts": sorted(state.artifact_names)},
        "disable": logging.root.manager.disable,
    }


def warnings_snapshot() -> list[str]:
    """Python's warnings filters, each as (action, message, category, module, lineno) text."""
    return [str((action, getattr(message, "pattern", message), getattr(category, "__name__", category),
                 getattr(module, "pattern", module), lineno))
            for action, message, category, module, lineno in warnings.filters]


def _live_logging_objects() -> list:
    """Every handler and filter attached now: held for the whole probe, so no new object can take the id of
    one the finder removed (ids are what the snapshots compare)."""
    objects: list = []
    for logger in _torch_loggers().values():
        objects += logger.handlers + logger.filters
        for handler in logger.handlers:
            objects += handler.filters
    return objects


class UsersFilter(logging.Filter):
    """A filter a user put on a logger (it lets every record through)."""


class UsersDroppingFilter(logging.Filter):
    """A filter a user put on a logger to drop what it logs (every record)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return False


class UsersHandler(logging.Handler):
    """A handler a user put on a logger to keep their own record of what it logs."""

    def emit(self, record: logging.LogRecord) -> None:
        pass


# Handlers a user may have on a logger, by kind: one of their own class, and standard ones a finder might also add
# (and then remove "by type", taking the user's with it): logging.NullHandler is the usual library idiom.
USER_HANDLER_KINDS: dict[str, Callable[[], logging.Handler]] = {
    "own": UsersHandler,
    "null": logging.NullHandler,
    "stream": lambda: logging.StreamHandler(io.StringIO()),
}


def handler_kinds(tweaks: dict) -> tuple[str, ...]:
    """The user's handlers on one logger, in the order added: tweaks["handler"] is a tuple of USER_HANDLER_KINDS
    names, or a bool (True: one of their own class)."""
    value = tweaks.get("handler")
    if isinstance(value, bool):
        return ("own",) if value else ()
    return tuple(value or ())


def graph_break_loggers() -> list[logging.Logger]:
    return [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
            if name.endswith(".__graph_breaks")]


# The loggers a finder may touch, by the role katas.common.strategies.user_logging_settings() gives them.
LOGGER_ROLES: dict[str, Callable[[], list[logging.Logger]]] = {
    "graph_breaks": graph_break_loggers,
    "trace": lambda: [logging.getLogger("torch.__trace")],
    "hint": lambda: [logging.getLogger("torch._dynamo.variables.tensor")],
    "dynamo": lambda: [logging.getLogger("torch._dynamo")],
}

# A user who hid the graph-break reports every way at once: a filter of their own that drops every record, first
# of their two filters (a collecting filter added anywhere after it, even second to last, sees nothing), the
# loggers disabled, their level at ERROR, and their parent torch._dynamo at ERROR too; and the same on
# torch.__trace, the structured trace a finder may collect from instead (its level, disabled, a dropping filter).
USER_HIDING = {
    "set_logs": {},
    "loggers": {
        "graph_breaks": {"level": 40, "propagate": None, "disabled": True, "handler": False, "filter": True,
                         "drop_filter": "first"},
        "trace": {"level": 40, "propagate": None, "disabled": True, "handler": False, "filter": True,
                  "drop_filter": "first"},
        "hint": {"level": None, "propagate": None, "disabled": False, "handler": False, "filter": False},
        "dynamo": {"level": 40, "propagate": None, "disabled": False, "handler": False, "filter": False},
    },
    "warnings_filter": False,
}

USERS_WARNING_FILTER = ("always", r"a user's own warnings filter", UserWarning)

# Warnings filters a user may have, by kind: "own" (USERS_WARNING_FILTER), and filters a finder might add itself,
# which the user may already have: then a bare filterwarnings/simplefilter moves the user's entry to the front (it
# replaces an equal one), and removing "the one I added" afterwards removes the user's.
WARNING_FILTER_KINDS: dict[str, tuple[str, dict]] = {
    "own": ("filterwarnings", {"action": "always", "message": USERS_WARNING_FILTER[1], "category": UserWarning}),
    "ignore_torch": ("filterwarnings", {"action": "ignore", "module": r"torch\."}),
    "ignore_all": ("simplefilter", {"action": "ignore"}),
    "ignore_user_warnings": ("filterwarnings", {"action": "ignore", "category": UserWarning}),
}


def warning_filter_kinds(settings: dict) -> tuple[str, ...]:
    """The user's warnings filters, front first: settings["warnings_filter"] is a tuple of WARNING_FILTER_KINDS
    names, or a bool (True: their own filter only)."""
    value = settings.get("warnings_filter")
    if isinstance(value, bool):
        return ("own",) if value else ()
    return tuple(value or ())

# A user who changed every setting a finder might put back wrongly: graph_breaks and recompiles logging on, a
# handler of their own, a logging.NullHandler and a filter of their own on every logger a finder may touch, the graph-break loggers with propagate off
# (torch's default is on), torch.__trace at INFO with propagate on (torch's default is off), the `.item()` hint
# logger disabled with a level of ERROR and propagate off, torch._dynamo propagate off, and warnings filters of
# their own: their own first, then the very filters a finder might add (ignore torch's modules, ignore all).
USER_EVERYTHING = {
    "set_logs": {"graph_breaks": True, "recompiles": True},
    "loggers": {
        "graph_breaks": {"level": None, "propagate": False, "disabled": False, "handler": ("own", "null"),
                         "filter": True},
        "trace": {"level": 20, "propagate": True, "disabled": False, "handler": ("own", "null"), "filter": True},
        "hint": {"level": 40, "propagate": False, "disabled": True, "handler": ("null", "own"), "filter": True},
        "dynamo": {"level": None, "propagate": False, "disabled": False, "handler": ("own", "null"), "filter": True},
    },
    "warnings_filter": ("own", "ignore_torch", "ignore_all"),
}

# The other values of the same settings: the graph-break loggers and torch.__trace disabled with levels of their
# own (WARNING, ERROR), the hint logger with propagate on and a level of INFO, torch._dynamo at ERROR, and a
# user who ignores UserWarnings behind a filter of their own.
USER_EVERYTHING_ELSE = {
    "set_logs": {"recompiles": True},
    "loggers": {
        "graph_breaks": {"level": 30, "propagate": None, "disabled": True, "handler": False, "filter": True},
        "trace": {"level": 40, "propagate": None, "disabled": True, "handler": True, "filter": False},
        "hint": {"level": 20, "propagate": True, "disabled": False, "handler": False, "filter": True},
        "dynamo": {"level": 40, "propagate": None, "disabled": False, "handler": False, "filter": False},
    },
    "warnings_filter": ("own", "ignore_user_warnings", "ignore_torch"),
}


# A user who set every logger a finder may touch to NOTSET explicitly (torch.__trace's own level included: torch
# sets DEBUG there; its effective level is then the parent `torch`'s WARNING, so a finder that puts back
# getEffectiveLevel() instead of `level` leaves 30 where 0 was), with standard handlers on each (a NullHandler,
# a StreamHandler: a finder that removes handlers by class takes theirs) and graph_breaks logging on.
USER_NOTSET = {
    "set_logs": {"graph_breaks": True},
    "loggers": {
        "graph_breaks": {"level": 0, "propagate": None, "disabled": False, "handler": ("null", "stream"),
                         "filter": False},
        "trace": {"level": 0, "propagate": None, "disabled": False, "handler": ("null", "stream"), "filter": False},
        "hint": {"level": 0, "propagate": None, "disabled": False, "handler": ("stream", "null"), "filter": False},
        "dynamo": {"level": 0, "propagate": None, "disabled": False, "handler": ("null",), "filter": False},
    },
    "warnings_filter": (),
}


def _logger_state(logger: logging.Logger) -> tuple:
    return logger.level, logger.propagate, logger.disabled, list(logger.handlers), list(logger.filters)


# Logging and warnings as they were when the probes were loaded, before any finder ran: every logging probe starts
# from here, so what one check's finder leaked is not part of the next check's "before".
PRISTINE = {
    "loggers": {name: _logger_state(logger) for name, logger in list(logging.root.manager.loggerDict.items())
                if name.startswith("torch") and isinstance(logger, logging.Logger)},
    "disable": logging.root.manager.disable,
    "warnings": list(warnings.filters),
}


def back_to_pristine() -> None:
    """torch's logging settings reset (torch._logging.set_logs()), then every torch logger, logging.disable and
    Python's warnings filters put back as PRISTINE holds them; a logger made since then loses every handler and
    filter and is enabled."""
    with quiet():  # with TORCH_LOGS set, set_logs only warns that it does nothing
        torch._logging.set_logs()
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if not (name.startswith("torch") and isinstance(logger, logging.Logger)):
            continue
        if name in PRISTINE["loggers"]:
            level, propagate, disabled, handlers, filters = PRISTINE["loggers"][name]
            logger.level, logger.propagate = level, propagate
        else:
            disabled, handlers, filters = False, [], []
        logger.disabled = disabled
        logger.handlers[:] = handlers
        logger.filters[:] = filters
    logging.disable(PRISTINE["disable"])
    warnings.filters[:] = PRISTINE["warnings"]
    warnings._filters_mutated()
    logging.root.manager._clear_cache()


def apply_user_settings(settings: dict) -> None:
    """Make the logging state `settings` describes (see katas.common.strategies.user_logging_settings)."""
    with quiet():
        torch._logging.set_logs(**settings["set_logs"])
    for role, tweaks in settings["loggers"].items():
        for logger in LOGGER_ROLES[role]():
            if tweaks["level"] is not None:
                logger.setLevel(tweaks["level"])
            if tweaks["propagate"] is not None:
                logger.propagate = tweaks["propagate"]
            logger.disabled = logger.disabled or tweaks["disabled"]
            if tweaks.get("drop_filter") == "first":
                logger.addFilter(UsersDroppingFilter())
            if tweaks["filter"]:
                logger.addFilter(UsersFilter())
            if tweaks.get("drop_filter") == "last":
                logger.addFilter(UsersDroppingFilter())
            for kind in handler_kinds(tweaks):
                logger.addHandler(USER_HANDLER_KINDS[kind]())
    for kind in reversed(warning_filter_kinds(settings)):  # each goes to the front: the first named ends first
        how, options = WARNING_FILTER_KINDS[kind]
        getattr(warnings, how)(**options)


def probe_logging(attempt: ModuleType, case_name: str, settings: dict | None = None, raises: bool = False) -> dict:
    """Logging state right before and right after one `find_graph_breaks` call on hidden case `case_name`, for a
    user whose settings are `settings` (None: torch's defaults). First everything goes back to the state at
    load time (back_to_pristine: what earlier finders leaked is gone), then the user's settings are made, then a
    warm-up compile, so that torch's lazy trace handler has settled before the first snapshot. "raised" is the
    exception the finder let out, if any (`raises`: the case's function raises ValueError; NotImplementedError
    always propagates); "answer" what the finder returned (None when it raised). Afterwards the pristine state is put back, for the checks that follow."""
    case = HIDDEN.CASES[case_name]
    back_to_pristine()
    try:
        if settings is not None:
            apply_user_settings(settings)
        settle_logging()
        held = _live_logging_objects()
        before = logging_snapshot()
        raised, result = None, None
        torch._dynamo.reset()
        try:
            # quiet() catches warnings, and its catch_warnings would undo a finder's change to the filters on the
            # way out: they are read inside it, right before and right after the call.
            with quiet():
                before["warnings"] = warnings_snapshot()
                try:
                    result = attempt.find_graph_breaks(case.fn, *case.make_args(), **case.make_kwargs())
                finally:
                    warnings_after = warnings_snapshot()
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - the suspect's ValueError, or whatever the finder let out
            if not raises:
                raise
            raised = f"{type(exc).__name__}: {exc}"
        after = logging_snapshot()
        after["warnings"] = warnings_after
        del held
    finally:
        back_to_pristine()
    return {"before": before, "after": after, "raised": raised, "answer": None if raised else answer(result)}


def probe_runs(attempt: ModuleType, case_name: str) -> dict:
    """The attempt's `find_graph_breaks` on hidden case `case_name`, whose function appends to HIDDEN.RUNS each
    time it runs: the answer, and how often the function ran during the call."""
    case = HIDDEN.CASES[case_name]
    torch._dynamo.reset()
    HIDDEN.RUNS.clear()
    with quiet():
        result = attempt.find_graph_breaks(case.fn, *case.make_args(), **case.make_kwargs())
    runs = len(HIDDEN.RUNS)
    HIDDEN.RUNS.clear()
    return {"answer": answer(result), "runs": runs}


def probe_find_chain(attempt: ModuleType, steps: tuple[str, ...], x: torch.Tensor) -> dict:
    """The attempt's `find_graph_breaks(HIDDEN.chain, x, *steps)`: the named steps (HIDDEN.STEPS, one break each,
    in suspects_hidden.py and helpers_hidden.py) run in that order."""
    torch._dynamo.reset()
    with quiet():
        result = attempt.find_graph_breaks(HIDDEN.chain, x, *[HIDDEN.STEPS[name] for name in steps])
    return answer(result)


def dynamo_config_changes() -> dict[str, str]:
    """Every key of torch._dynamo.config whose value is not its default, with the value (repr, trimmed)."""
    config = torch._dynamo.config
    return {key: repr(getattr(config, key))[:200] for key in sorted(config._config) if _differs(key)}


def _differs(key: str) -> bool:
    """The key's value is not its default: overridden (or changed in place, a set one added to), and not set
    explicitly to the default value. Aliases of other keys (cache_size_limit) follow the key they alias."""
    config = torch._dynamo.config
    if config._is_default(key):
        return False
    try:
        return bool(getattr(config, key) != config._config[key].default)
    except Exception:  # noqa: BLE001 - a value that cannot be compared: overridden counts as changed
        return True


def probe_dynamo_config(attempt: ModuleType, started: bool = False) -> dict:
    """torch._dynamo.config as the attempt's module left it: the keys that differ from their defaults. The checks
    and probes change the config only inside `config.patch(...)`, so any difference is the attempt's (at import,
    or left by an earlier call). With `started`, each `fixed_<name>` is first called eagerly on its example
    inputs: when every one raises NotImplementedError (the stub), the first one propagates, so that this check
    reads "not implemented" like the others; any other outcome of those calls is left to the fix checks."""
    if started:
        unfinished = []
        for name in SUSPECTS.SUSPECTS:
            fixed = getattr(attempt, f"fixed_{name}", None)
            try:
                with quiet():
                    fixed(*SUSPECTS.example_inputs(name))
            except NotImplementedError as exc:
                unfinished.append(exc)
            except Exception:  # noqa: BLE001 - missing or failing: the fix checks say so
                pass
        if len(unfinished) == len(SUSPECTS.SUSPECTS):
            raise unfinished[0]
    return {"changed": dynamo_config_changes()}


def probe_find_linked(attempt: ModuleType) -> dict:
    """The attempt's `find_graph_breaks` on a helper whose module was imported through a symlinked folder by a
    path with a `..` in it (`<tmp>/real/../linked/helpers_hidden.py`, `linked` -> this folder): its co_filename,
    which Dynamo prints, is neither its real path nor a normalised one. Returns the answer and that co_filename;
    the folder is removed afterwards."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="kata02-linked-"))
    try:
        (folder / "real").mkdir()
        (folder / "linked").symlink_to(HIDDEN_DIR, target_is_directory=True)
        path = f"{folder}{os.sep}real{os.sep}..{os.sep}linked{os.sep}helpers_hidden.py"
        spec = importlib.util.spec_from_file_location("kata02_helpers_linked", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        fn = module.peak_scaled
        torch._dynamo.reset()
        with quiet():
            result = attempt.find_graph_breaks(fn, torch.tensor([0.5, 1.5, 1.0]))
        return {"answer": answer(result), "co_filename": fn.__code__.co_filename}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def probe_find_same_name(attempt: ModuleType) -> dict:
    """The attempt's `find_graph_breaks` on HIDDEN.chain(x, first, second), where `first` and `second` are
    `peak_scaled` from two modules with the same file name in different folders: helpers_hidden.py here, and a
    copy of it in a temporary folder (`<tmp>/elsewhere/helpers_hidden.py`). Both break on the same line number.
    Returns the answer and the two co_filenames, in call order; the folder is removed afterwards."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="kata02-twin-"))
    try:
        (folder / "elsewhere").mkdir()
        path = folder / "elsewhere" / "helpers_hidden.py"
        path.write_text((HIDDEN_DIR / "helpers_hidden.py").read_text(encoding="utf-8"), encoding="utf-8")
        spec = importlib.util.spec_from_file_location("kata02_helpers_elsewhere", str(path))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        first, second = HIDDEN.helpers.peak_scaled, module.peak_scaled
        torch._dynamo.reset()
        with quiet():
            result = attempt.find_graph_breaks(HIDDEN.chain, torch.tensor([0.5, 1.5, 1.0]), first, second)
        return {"answer": answer(result),
                "co_filenames": [first.__code__.co_filename, second.__code__.co_filename]}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --- the fixes --------------------------------------------------------------------------------------------

class GraphRecorder:
    """A torch.compile backend: keeps every graph it receives and counts how often one runs."""

    def __init__(self) -> None:
        self.graphs: list[torch.fx.GraphModule] = []
        self.runs = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        self.graphs.append(gm)

        def run(*args):
            self.runs += 1
            return gm.forward(*args)

        return run


def op_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]


def node_text(node: torch.fx.Node) -> str:
    target = node.target
    name = target if isinstance(target, str) else getattr(target, "__name__", str(target))
    return f"{node.name} ({node.op} {name})"


def opaque_node(gm: torch.fx.GraphModule) -> str | None:
    """A node that hides ops from the compiler: a Python function of the attempt's put in the graph whole
    (torch._dynamo.allow_in_graph), or a custom op; the compiler sees one call, not the ops inside. The
    branches of a torch.cond are subgraphs of their own and are searched too."""
    for node in op_nodes(gm):
        target = node.target
        if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
            if target.namespace not in ("aten", "prims"):
                return node_text(node)
        elif isinstance(target, types.FunctionType) and not (target.__module__ or "").startswith("torch"):
            return node_text(node)
    for _, sub in gm.named_children():
        if isinstance(sub, torch.fx.GraphModule):
            found = opaque_node(sub)
            if found is not None:
                return found
    return None


def _attempt_location(exc: BaseException, attempt_file: str | None) -> str:
    """' at file:line `code`' of the innermost frame of the attempt's file in Dynamo's user stack, or ''."""
    stack = getattr(exc, "real_stack", None) or []
    with contextlib.suppress(OSError, TypeError):
        mine = [f for f in stack if attempt_file and Path(f.filename).resolve() == Path(attempt_file).resolve()]
        if mine:
            return f" at {Path(mine[-1].filename).name}:{mine[-1].lineno} `{(mine[-1].line or '').strip()}`"
    return ""


class _BreakReports(logging.Handler):
    """The probe's own record of Dynamo's graph-break reports while a fix compiles, for the learner's message:
    (file name, line, the first line of the cause)."""

    LOCATION = re.compile(r"in user code at (.+):(\d+)\s*$", re.MULTILINE)

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.found: list[tuple[str, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        where = self.LOCATION.search(message)
        if where is None:
            return
        reason = message.split("Graph Break Reason:", 1)[-1]
        lines = [line.strip() for line in reason.splitlines() if line.strip() and not line.strip().endswith(":")]
        entry = (Path(where[1]).name, int(where[2]), lines[0] if lines else "")
        if entry[:2] not in [f[:2] for f in self.found]:
            self.found.append(entry)


@contextlib.contextmanager
def _collect_breaks():
    reports = _BreakReports()
    saved = [(logger, logger.level, logger.propagate) for logger in graph_break_loggers()]
    for logger, _, _ in saved:
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        logger.addHandler(reports)
    try:
        yield reports.found
    finally:
        for logger, level, propagate in saved:
            logger.removeHandler(reports)
            logger.setLevel(level)
            logger.propagate = propagate


def _config_defaults() -> dict[str, Any]:
    """DEFAULT_CAPTURE_CONFIG, and every other key of torch._dynamo.config that is not at its default, back at it."""
    config = torch._dynamo.config
    defaults = {key: config._config[key].default for key in config._config if _differs(key)}
    return {**defaults, **DEFAULT_CAPTURE_CONFIG}


def probe_fix(attempt: ModuleType, name: str, args: tuple, how: str, more: tuple = ()) -> dict:
    """`fixed_<name>` of the attempt on `args` (tensors), run `how`: "eager" (called directly), "fullgraph"
    (torch.compile(..., fullgraph=True)) or "plain" (torch.compile without fullgraph), compiled with a backend
    that records its graphs, Dynamo reset first and the capture flags at their defaults.

    Returns "output" (a tensor, or None), and for the compiled runs "graphs" (how many), "runs" (how often a
    compiled graph ran), "ops" (op nodes of each graph, as text), "opaque" (a node hiding ops, or None),
    "error" (a Dynamo error as type, first line, location in the attempt's file, lower-cased text, or None)
    and, for "plain", "breaks" (where Dynamo broke the graph, as reported). "missing" / "disabled" say the
    function does not exist or is wrapped in torch.compiler.disable; then nothing runs.

    `more`: further argument tuples, each passed to the same compiled function after `args` (one compile serves
    every input): "more_outputs" holds their outputs; "graphs", "runs" and "ops" count the first call only.
    "inputs_after" holds each call's arguments as they were after the call (a fix must not change them). Every
    key of torch._dynamo.config is at its default while the fix compiles, whatever the attempt set."""
    fixed = getattr(attempt, f"fixed_{name}", None)
    if not callable(fixed):
        return {"missing": True}
    if getattr(fixed, "_torchdynamo_disable", False):
        return {"missing": False, "disabled": True}
    args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    result: dict = {"missing": False, "disabled": False, "output": None, "error": None}
    if how == "eager":
        with quiet():
            result["output"] = fixed(*args)
        return result
    recorder = GraphRecorder()
    torch._dynamo.reset()
    breaks: list = []
    more = [tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in extra) for extra in more]
    first: tuple = ()
    try:
        with quiet(), torch._dynamo.config.patch(**_config_defaults()):
            compiled = torch.compile(fixed, backend=recorder, fullgraph=how == "fullgraph")
            if how == "plain":
                with _collect_breaks() as breaks:
                    result["output"] = compiled(*args)
            else:
                result["output"] = compiled(*args)
            first = (len(recorder.graphs), recorder.runs)
            result["more_outputs"] = [compiled(*extra) for extra in more]
    except torch._dynamo.exc.TorchDynamoException as exc:
        text = str(exc)
        result["error"] = {"type": type(exc).__name__, "first_line": (text.strip().splitlines() or [""])[0],
                           "where": _attempt_location(exc, getattr(attempt, "__file__", None)),
                           "text": text.lower()[:20000]}
    graphs, runs = first or (len(recorder.graphs), recorder.runs)
    result.update(graphs=graphs, runs=runs, inputs_after=[list(args), *[list(extra) for extra in more]],
                  ops=[[node_text(n) for n in op_nodes(gm)] for gm in recorder.graphs[:graphs]],
                  opaque=next((found for gm in recorder.graphs if (found := opaque_node(gm))), None),
                  breaks=list(breaks))
    torch._dynamo.reset()
    return result
