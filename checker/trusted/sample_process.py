"""The child process behind `make diff`'s sample graphs (`python -m checker.trusted.sample_process ...`).

Imports the reference, the kata's `sample_graphs` hook and the attempt, calls the hook and writes one JSON
event tagged with a token the attempt never sees (as checker/trusted/checks_process.py does). The parent owns the
time limit.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import traceback
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from checker.core.modules import load_module
from checker.core.processes import exit_without_teardown
from checker.trusted.checks_process import _Events


def _first_line(exc: BaseException) -> str:
    text = exc.msg if isinstance(exc, SyntaxError) else (str(exc).strip().splitlines() or [""])[0]
    line = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
    return f"{type(exc).__name__}{line}: {text}"


def find_hook(hook_files: list[Path], name: str = "sample_graphs"):
    for i, path in enumerate(hook_files):
        if path.is_file():
            module = load_module(path, f"kata_hidden_sample_{i}")
            hook = getattr(module, name, None)
            if callable(hook):
                return hook
    return None


def _load(args, sink: io.StringIO, hook_name: str):
    """(reference, the kata's hook or None, attempt or None, why the attempt could not be imported), the
    reference first and everything they print kept out of the results."""
    with redirect_stdout(sink), redirect_stderr(sink):
        import torch  # noqa: F401

        reference = load_module(args.reference, f"reference_{args.module_name}")
        hook = find_hook(args.hook, hook_name)
    if hook is None:
        return reference, None, None, ""
    try:
        with redirect_stdout(sink), redirect_stderr(sink):
            return reference, hook, load_module(args.attempt.resolve(), args.module_name), ""
    except BaseException as exc:  # noqa: BLE001 - any import failure, SystemExit included
        return reference, hook, None, f"could not import your file: {_first_line(exc)}"


def _pictures(args, events: _Events, sink: io.StringIO) -> int:
    """`--pictures`: the kata's graph_pictures(attempt, reference, capture=, model=) as plain data."""
    from checker.kit.pictures import panels_to_data

    reference, hook, attempt, failed = _load(args, sink, "graph_pictures")
    if hook is None:
        events.emit(event="none")
        return 0
    attempt = attempt or reference  # drawn, then replaced by why it could not be imported
    try:
        with redirect_stdout(sink), redirect_stderr(sink):
            panels = hook(attempt, reference, capture=args.capture, model=args.model)
    except (KeyError, ValueError) as exc:  # a model or capture the kata does not draw
        events.emit(event="pictures", error=f"cannot draw that: {exc}")
        return 0
    if failed:
        for panel in panels:
            panel.attempt = failed
    events.emit(event="pictures", panels=panels_to_data(panels))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m checker.trusted.sample_process")
    parser.add_argument("--hook", action="append", type=Path, default=[])
    parser.add_argument("--attempt", required=True, type=Path)
    parser.add_argument("--reference", required=True, type=Path)
    parser.add_argument("--module-name", required=True)
    parser.add_argument("--results-fd", type=int, required=True)
    parser.add_argument("--pictures", action="store_true", help="the graph_pictures hook instead of sample_graphs")
    parser.add_argument("--capture", default=None)
    parser.add_argument("--model", default=None)
    args = parser.parse_args(argv)

    events = _Events(args.results_fd)
    warnings.simplefilter("ignore")
    sys.path.insert(0, str(args.attempt.resolve().parent))
    sink = io.StringIO()
    if args.pictures:
        return _pictures(args, events, sink)
    reference, hook, attempt, failed = _load(args, sink, "sample_graphs")
    if hook is None:
        events.emit(event="none")
        return 0
    if attempt is None:
        with redirect_stdout(sink), redirect_stderr(sink):
            _, ref_side = hook(reference, reference)
        events.emit(event="sample", attempt=failed, reference=ref_side)
        return 0
    try:
        with redirect_stdout(sink), redirect_stderr(sink):
            att_side, ref_side = hook(attempt, reference)
    except BaseException as exc:  # noqa: BLE001 - a hook that lets the attempt's exception escape
        with redirect_stdout(sink), redirect_stderr(sink):
            _, ref_side = hook(reference, reference)
        detail = traceback.extract_tb(exc.__traceback__)
        where = f" at {Path(detail[-1].filename).name}:{detail[-1].lineno}" if detail else ""
        att_side = f"the sample failed with your code: {_first_line(exc)}{where}"
    events.emit(event="sample", attempt=str(att_side), reference=str(ref_side))
    return 0


if __name__ == "__main__":
    exit_without_teardown(main())
