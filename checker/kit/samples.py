"""The per-kata hook behind `make diff N=k`'s side-by-side graphs, and helpers for writing one.

A kata shows "what your code does to one sample model, next to what the reference does" by defining

    def sample_graphs(attempt, reference) -> tuple[str, str]:
        "Text for the attempt's column and the reference's column."

in `katas/NN_slug/hidden/sample.py` (or in `hidden/checks.py`). `attempt` and `reference` are the imported
modules, with the kata's public API. Build the sample model once, give each module its own fresh copy, and
render the FX graph each produces (`gm.code`, or one line per node). Wrap every call into the attempt in
`guarded(...)` so an unfinished or crashing attempt shows its error in its own column while the reference
column still renders. The hook runs in a child process under the kata's time limit, with the attempt's prints
discarded; a kata without a hook gets the source diff only. Example: katas/01_dialects/hidden/sample.py.
"""
from __future__ import annotations

import traceback
from types import ModuleType
from typing import Any, Callable, Iterable

from katas.common import capture
from katas.common.naming import target_name
from katas.common.zoo import ZOO


def guarded(func: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """`str(func(*args, **kwargs))`, or a short line naming the exception it raised and where it came from."""
    try:
        return str(func(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - the attempt may raise anything; show it, do not stop the sample
        return failure_text(exc)


def failure_text(exc: BaseException) -> str:
    """One short line for an exception an attempt raised: "not implemented (file:line)" or what it raised, where."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})" if frames else ""
    if isinstance(exc, NotImplementedError):
        return f"not implemented{where}"
    first = (str(exc).strip().splitlines() or [""])[0]
    text = f"raised {type(exc).__name__}{where}: {first}"
    return text if len(text) <= 100 else text[:99] + "…"


def picture_or_failure(draw: Callable[[], Any]) -> Any:
    """`draw()` (a checker.kit.pictures.Picture), or the line `failure_text` gives for what it raised."""
    try:
        return draw()
    except Exception as exc:  # noqa: BLE001 - the attempt's error is what its side of the page shows
        return failure_text(exc)


def graph_lines(gm: Any, describe: Callable[[Any], str] | None = None) -> list[str]:
    """One line per node of `gm`'s graph (`name = op target(args)`), each followed by `-> describe(node)` if given."""
    lines = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            line = f"{node.name} = placeholder"
        elif node.op == "output":
            line = f"output {node.args[0]}"
        else:
            args = ", ".join(str(a) for a in node.args)
            line = f"{node.name} = {node.op} {target_name(node.target)}({args})"
        lines.append(line + (f"  -> {describe(node)}" if describe else ""))
    return lines


def per_capture(model_name: str, methods: Iterable[str], label: str,
                lines_of: Callable[[ModuleType, Any], list[str]], attempt: ModuleType,
                reference: ModuleType) -> tuple[str, str]:
    """Both columns for zoo model `model_name` captured with each of `methods`: a header naming the capture
    ("<method> (<label>, input <shape>)"), then `lines_of(module, gm)` for that side. The reference reads each
    graph before the attempt, which may change it."""
    model = ZOO[model_name]
    mine, theirs = [], []
    for method in methods:
        gm = capture(model.build(), model.inputs(), method).gm
        header = f"{method} ({label}, input {model.input_shape})"
        theirs += [header, *lines_of(reference, gm), ""]
        mine += [header, *lines_of(attempt, gm), ""]
    return "\n".join(mine).rstrip(), "\n".join(theirs).rstrip()
