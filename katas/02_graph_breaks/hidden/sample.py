"""`make diff N=2`'s sample: each side's finder on the two given suspects that break twice, then each side's
fixes compiled with plain torch.compile and a backend that counts the graphs it receives.

The suspects (chatty_mlp: two prints; standardize: a log call and a warning) come from the read-only
suspects.py, so both columns hunt the same code. Each column shows the (file:line, reason) list its finder
returns (and whether a second call right after returns the same: it must reset Dynamo), whether it left
torch's logging exactly as it found it (every torch logger's level, propagate, handlers and filters), and for
every `fixed_<suspect>`: how many graphs it compiles into (one is the goal), how many ops they hold (one opaque
call hides the ops), and whether it returns what the suspect does.
"""
from __future__ import annotations

from pathlib import Path

import torch
import torch._dynamo

from checker.kit import load_module
from checker.kit.samples import guarded, picture_or_failure
from katas.common.quiet import quiet

SUSPECTS = load_module(Path(__file__).resolve().parent.parent / "suspects.py", "suspects")  # as checks.py names it
probes = load_module(Path(__file__).resolve().with_name("probes.py"), "kata02_graph_breaks_probes")
HUNTED = ("chatty_mlp", "standardize")  # two breaks each
CAPTURE_DEFAULTS = {"capture_scalar_outputs": False, "capture_dynamic_output_shape_ops": False}


def _same_logging(before: dict, after: dict) -> bool:
    """Two probes.logging_snapshot()s agree on every logger that existed before (compiling creates new ones)."""
    kept = {name: after["loggers"].get(name) for name in before["loggers"]}
    return kept == before["loggers"] and all(before[key] == after[key] for key in ("torch_logs", "disable"))


def _breaks(module, name: str) -> list[str]:
    with quiet():
        found = module.find_graph_breaks(getattr(SUSPECTS, name), *SUSPECTS.example_inputs(name))
    if not isinstance(found, list):
        return [f"  returned {type(found).__name__}, not a list"]
    lines = [f"  {Path(str(getattr(b, 'filename', '?'))).name}:{getattr(b, 'lineno', '?')}  "
             f"{str(getattr(b, 'reason', '?'))[:70]}" for b in found]
    return lines or ["  [] (no breaks)"]


class _CountGraphs:
    def __init__(self) -> None:
        self.graphs: list[torch.fx.GraphModule] = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward


def _fix(module, name: str) -> str:
    fixed = getattr(module, f"fixed_{name}", None)
    if not callable(fixed):
        return f"no fixed_{name}"
    args = SUSPECTS.example_inputs(name)
    with quiet():
        want = getattr(SUSPECTS, name)(*args)
        torch._dynamo.reset()
        counter = _CountGraphs()
        with torch._dynamo.config.patch(**CAPTURE_DEFAULTS):
            got = torch.compile(fixed, backend=counter)(*(a.clone() for a in args))
    ops = sum(1 for gm in counter.graphs for n in gm.graph.nodes if n.op.startswith("call_"))
    try:
        torch.testing.assert_close(got, want, equal_nan=True)
        same = "yes"
    except Exception:  # noqa: BLE001 - wrong type, shape, dtype or numbers: all a "no"
        same = "NO"
    graphs = len(counter.graphs)
    return f"{graphs} graph{'' if graphs == 1 else 's'}, {ops} ops, matches suspect: {same}"


def _side(module) -> str:
    probes.settle_logging()
    held = probes._live_logging_objects()  # so no new handler can take the id of a removed one
    before = probes.logging_snapshot()
    lines = []
    for name in HUNTED:
        lines += [f"find_graph_breaks({name}):"]
        text = guarded(lambda: "\n".join(_breaks(module, name)))
        lines += text.splitlines() if text.startswith("  ") else [f"  {text}"]
    if text.startswith("  "):  # the finder ran: call it again, with nothing new to trace unless it resets
        again = guarded(lambda: "\n".join(_breaks(module, HUNTED[-1])))
        same = again == text
        lines += [f"the same call again: {'the same list' if same else 'a different list:'}"]
        lines += [] if same else again.splitlines() if again.startswith("  ") else [f"  {again}"]
    lines += [f"torch's logging left as found: {'yes' if _same_logging(before, probes.logging_snapshot()) else 'NO'}", "",
              "torch.compile(fixed_<suspect>), counting graphs:"]
    lines += [f"  {name}: {guarded(_fix, module, name)}" for name in SUSPECTS.SUSPECTS]
    torch._dynamo.reset()
    del held
    return "\n".join(lines)


def sample_graphs(attempt, reference) -> tuple[str, str]:
    theirs = _side(reference)  # the reference first: an attempt may leave loggers or Dynamo state behind
    mine = guarded(_side, attempt)
    return mine, theirs


def _graphs(func, args) -> list:
    """The graphs torch.compile makes of `func(*args)`: one more per graph break."""
    with quiet():
        torch._dynamo.reset()
        counter = _CountGraphs()
        with torch._dynamo.config.patch(**CAPTURE_DEFAULTS):
            torch.compile(func, backend=counter)(*(a.clone() for a in args))
        torch._dynamo.reset()
    return counter.graphs


def _pieces(graphs: list, title: str, caption: str):
    """Every graph of one compile as one picture: the pieces side by side, nodes prefixed with their graph."""
    from checker.kit.pictures import Picture, picture_of

    nodes, edges = [], []
    for index, gm in enumerate(graphs):
        piece = picture_of(gm, title)
        for node in piece.nodes:
            node.name, node.group = f"g{index}.{node.name}", f"graph {index}"
        for edge in piece.edges:
            edge.src, edge.dst = f"g{index}.{edge.src}", f"g{index}.{edge.dst}"
        nodes += piece.nodes
        edges += piece.edges
    return Picture(title, nodes, edges, caption)


def graph_pictures(attempt, reference, *, capture=None, model=None):
    """`make graph N=2`: for each suspect (or only `model`), the graphs torch.compile makes of it (one per piece
    between breaks), beside the graphs it makes of each side's fixed_<suspect> (one is the goal)."""
    from checker.kit.pictures import Panel

    if capture not in (None, "dynamo"):
        raise ValueError("kata 2's graphs are Dynamo's: --capture dynamo, or leave it out")
    names = [model] if model else list(SUSPECTS.SUSPECTS)
    panels = []
    for name in names:
        args = SUSPECTS.example_inputs(name)
        graphs = _graphs(getattr(SUSPECTS, name), args)
        sides = []
        for module in (attempt, reference):
            def draw(module=module):
                fixed = getattr(module, f"fixed_{name}", None)
                if not callable(fixed):
                    raise NotImplementedError(f"no fixed_{name}")
                pieces = _graphs(fixed, args)
                return _pieces(pieces, f"fixed_{name}", f"{len(pieces)} graph(s)")
            sides.append(picture_or_failure(draw))
        shape = (f"{len(graphs)} graph(s) as written, {len(graphs) - 1} break(s)" if graphs else
                 "no graph as written: Dynamo gave up on the whole frame, which runs eagerly")
        panels.append(Panel(f"{name}: {shape}", sides[0], sides[1],
                            before=_pieces(graphs, name, f"{len(graphs)} graph(s)")))
    return panels
