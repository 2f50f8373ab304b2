"""The child process that imports an attempt and runs a kata's checks (`python -m checker.child ...`).

It writes one JSON event per line to the results file named in FX_KATAS_RESULTS, opened before any
attempt code runs and tagged with a per-run token the attempt never sees, so nothing the attempt prints,
and no early exit, can pass for a result. The parent owns the time limit.
"""
from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import sys
import time
import traceback
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from types import ModuleType
from typing import Iterable

from checker.kit import CheckSpec, Context, env_profile

MAX_OUTPUT_CHARS = 2000


class _Events:
    def __init__(self, path: str, token: str) -> None:
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - must stay open for the whole run
        self._token = token

    def emit(self, **event: object) -> None:
        event["token"] = self._token
        self._file.write(json.dumps(event) + "\n")
        self._file.flush()


def exit_without_teardown(code: int) -> None:
    """End a child process now that everything it reports is flushed.

    Interpreter teardown takes 0.7–1.2 s once torch, Dynamo and export are loaded (measured on 2.13, 2 cores):
    time the learner would spend waiting for a report that is already written.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def load_module(path: Path, name: str) -> ModuleType:
    """Import the file at `path` as module `name` (kata folders are not importable packages)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def attempt_location(exc: BaseException, attempt_path: Path) -> tuple[int | None, str]:
    """The innermost line of the attempt in `exc`'s traceback, as (line, function)."""
    found: tuple[int | None, str] = (None, "")
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).resolve() == attempt_path:
        return exc.lineno, ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == attempt_path:
            found = (frame.lineno, frame.name)
    return found


def _raised_by_attempt(exc: BaseException, attempt_path: Path) -> bool:
    return attempt_location(exc, attempt_path)[0] is not None


def classify_exception(exc: BaseException, attempt_path: Path) -> tuple[str, str]:
    """Map an exception escaping a check to (check status, learner-facing message)."""
    line, func = attempt_location(exc, attempt_path)
    where = f"{attempt_path.name}:{line}" + (f" in {func}()" if func else "") if line else ""
    if isinstance(exc, NotImplementedError) and (line or not str(exc)):
        return "not_implemented", f"not implemented yet ({where}): {exc}".replace(" (): ", ": ")
    if isinstance(exc, AssertionError) and not _raised_by_attempt(exc, attempt_path):
        return "fail", str(exc).strip() or "the check's assertion failed"
    if isinstance(exc, SystemExit):
        return "error", f"your code called sys.exit({exc.code!r}){' at ' + where if where else ''}; a pass or backend must return, not exit"
    first_line = (str(exc).strip().splitlines() or [""])[0]
    if where:
        return "error", f"your code raised {type(exc).__name__} at {where}: {first_line}"
    return "error", f"{type(exc).__name__}: {first_line}"


def _claimed(specs: list[CheckSpec], claims: Path):
    """Yield the specs no other shard has claimed yet, claiming each (an exclusive file create) just before
    it runs, so the shards split the work by how long it really takes."""
    for spec in specs:
        try:
            os.close(os.open(claims / spec.id, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            continue
        yield spec


def run_checks(specs: Iterable[CheckSpec], ctx: Context, events: _Events, attempt_path: Path) -> None:
    for spec in specs:
        events.emit(event="start", id=spec.id)
        ctx.fuzz_runs.clear()
        started = time.monotonic()
        captured = io.StringIO()
        try:
            with redirect_stdout(captured), redirect_stderr(captured), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                spec.func(ctx)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - attempt code may raise anything, SystemExit included
            status, message = classify_exception(exc, attempt_path)
            detail = "".join(traceback.format_exception(exc))
        else:
            status, message, detail = "pass", "", ""
        events.emit(
            event="result", id=spec.id, status=status, message=message, detail=detail,
            output=captured.getvalue()[-MAX_OUTPUT_CHARS:], fuzz=list(ctx.fuzz_runs),
            seconds=round(time.monotonic() - started, 3),
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m checker.child")
    parser.add_argument("--checks", required=True, type=Path)
    parser.add_argument("--attempt", required=True, type=Path)
    parser.add_argument("--reference", required=True, type=Path)
    parser.add_argument("--module-name", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--only", default="")
    parser.add_argument("--shard", default="0/1", help="INDEX/COUNT: with COUNT > 1, share the checks with the other shards")
    args = parser.parse_args(argv)

    events = _Events(os.environ.pop("FX_KATAS_RESULTS"), os.environ.pop("FX_KATAS_TOKEN"))
    warnings.simplefilter("ignore")
    attempt_path = args.attempt.resolve()
    sys.path.insert(0, str(attempt_path.parent))  # an attempt may import a helper module beside it

    import torch  # noqa: F401 - imported here so its start-up time is not charged to the attempt's import

    checks_module = load_module(args.checks, "kata_hidden_checks")
    only = {c for c in args.only.split(",") if c}
    specs = [s for s in checks_module.CHECKS.specs if not only or s.id in only]
    events.emit(event="plan", checks=[(s.id, s.stage, s.name, s.weight) for s in specs])
    index, count = (int(part) for part in args.shard.split("/"))
    claims = os.environ.pop("FX_KATAS_CLAIMS", "")
    try:
        with redirect_stdout(io.StringIO()):
            attempt = load_module(attempt_path, args.module_name)
    except BaseException as exc:  # noqa: BLE001 - report any import failure, SystemExit included
        line, _ = attempt_location(exc, attempt_path)
        text = exc.msg if isinstance(exc, SyntaxError) else (str(exc).strip().splitlines() or [""])[0]
        events.emit(event="import_error", file=str(attempt_path), line=line,
                    message=f"{type(exc).__name__}: {text}", detail="".join(traceback.format_exception(exc)))
        return 0
    # The reference loads after the attempt, so whatever the attempt does at import (registering a torch.compile
    # backend name, say) meets a fresh process, as it would on the learner's own machine.
    reference = load_module(args.reference, f"reference_{args.module_name}")
    ctx = Context(attempt=attempt, reference=reference, seed=args.seed, profile=env_profile())
    if count > 1:  # shards share the checks: odd shards walk the list backwards, each claims a check before running it
        specs = _claimed(specs[::-1] if index % 2 else specs, Path(claims))
    run_checks(specs, ctx, events, attempt_path)
    events.emit(event="done")
    return 0


if __name__ == "__main__":
    exit_without_teardown(main())
