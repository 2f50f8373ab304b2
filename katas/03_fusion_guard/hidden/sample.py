"""`make diff N=3`'s sample: a two-pair MLP where only one pair is safe, captured as a MODULE graph and as a
decomposed graph (export().run_decompositions(): CORE_ATEN), then rewritten by each side's `fuse_linear_gelu` on a fresh capture of its own.

    z = fc1(x); h = gelu(z) + z        fc1's output has two readers: the guard must leave this pair alone
    out = gelu_tanh(fc2(h))            fc2 (no bias) feeds the GELU only: fuse, carrying approximate="tanh"

Each column shows what the pass returned, the graph after it (fused nodes with their keyword arguments), and
running that graph: does it match eager, and how often did the fused kernel really run.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from checker.kit.samples import graph_lines, guarded, picture_or_failure
from katas.common import capture
from katas.common.ops import LINEAR_GELU_CALLS

CAPTURES = (("symbolic_trace", "MODULE"), ("export_core", "CORE_ATEN"))
# Three dimensions, as a sequence model's activations: decomposed graphs then flatten them for the product and put
# them back after it (the view sandwich of README.md), so the pictures show where a pass must look through a view.
INPUT_SHAPE = (2, 3, 4)


class GuardSample(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.act1 = nn.Linear(4, 6), nn.GELU()
        self.fc2, self.act2 = nn.Linear(6, 3, bias=False), nn.GELU(approximate="tanh")

    def forward(self, x):
        z = self.fc1(x)
        h = self.act1(z) + z
        return self.act2(self.fc2(h))


def _model() -> nn.Module:
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return GuardSample().eval()


def _inputs() -> tuple[torch.Tensor]:
    return (torch.randn(*INPUT_SHAPE, generator=torch.Generator().manual_seed(1)),)


def _lines(gm) -> list[str]:
    """graph_lines, plus each node's keyword arguments (where a fused node's `approximate` usually is)."""
    return [line + (f" {dict(node.kwargs)}" if node.kwargs else "")
            for line, node in zip(graph_lines(gm), gm.graph.nodes)]


def _run(captured, want: torch.Tensor) -> str:
    LINEAR_GELU_CALLS.reset()
    with torch.no_grad():
        got = captured.run(*_inputs())
    same = isinstance(got, torch.Tensor) and got.shape == want.shape and torch.allclose(got, want, atol=1e-5)
    return f"matches eager: {'yes' if same else 'NO'}, fused kernel ran {LINEAR_GELU_CALLS.count}x"


def _side(module) -> str:
    with torch.no_grad():
        want = _model()(*_inputs())
    lines = []
    for method, dialect in CAPTURES:
        captured = capture(_model(), _inputs(), method)  # a fresh capture per side: the pass rewrites it in place
        fused = guarded(module.fuse_linear_gelu, captured.gm)
        lines += [f"{dialect} ({method}): fuse_linear_gelu returned {fused}"]
        lines += ["  " + line for line in _lines(captured.gm)]
        lines += [f"  run: {guarded(_run, captured, want)}", ""]
    return "\n".join(lines).rstrip()


def sample_graphs(attempt, reference) -> tuple[str, str]:
    header = (f"z = fc1(x); h = gelu(z) + z; out = gelu_tanh(fc2(h)), input {INPUT_SHAPE}\n"
              "safe: fc2 (no bias) -> gelu_tanh; not safe: fc1, z has 2 readers\n")
    theirs = header + _side(reference)
    mine = header + guarded(_side, attempt)
    return mine, theirs


def _is_linear(gm, node) -> bool:
    """A node that computes a Linear in some dialect (a picture's judgement, not the checks')."""
    if node.op == "call_module":
        return isinstance(gm.get_submodule(node.target), nn.Linear)
    name = getattr(node.target, "__name__", str(node.target))
    return node.op == "call_function" and any(word in name for word in ("linear", "addmm", "mm"))


def _is_gelu(gm, node) -> bool:
    if node.op == "call_module":
        return isinstance(gm.get_submodule(node.target), nn.GELU)
    return node.op == "call_function" and "gelu" in getattr(node.target, "__name__", str(node.target)) \
        and "linear_gelu" not in str(node.target)


def _is_reshape(node) -> bool:
    return getattr(node, "op", "") == "call_function" and \
        any(w in getattr(node.target, "__name__", "") for w in ("view", "reshape"))


def _chain(node) -> list:
    """The nodes from the GELU's input back to the product it reads, through any reshape between them (the
    product last)."""
    chain = [node.args[0]] if node.args and hasattr(node.args[0], "op") else []
    while chain and _is_reshape(chain[-1]) and chain[-1].args:
        chain.append(chain[-1].args[0])
    return chain


def _producer(node):
    """The node a GELU reads, through any reshape between them."""
    chain = _chain(node)
    return chain[-1] if chain else None


def _data_input(gm, product):
    """The x a Linear-like product reads (addmm's is its second argument)."""
    index = 1 if "addmm" in getattr(product.target, "__name__", "") else 0
    return product.args[index] if len(product.args) > index else None


def _pairs_by_input(before) -> dict[str, str]:
    """Each Linear -> GELU pair of the graph as captured, keyed by the names of the value its Linear reads (and
    of what that value was reshaped from): a fused node reads the same x (`fc2 + act2`)."""
    pairs = {}
    for node in before.graph.nodes:
        if _is_gelu(before, node) and (source := _producer(node)) is not None and _is_linear(before, source):
            x = _data_input(before, source)
            while x is not None and hasattr(x, "name"):
                pairs[x.name] = f"{source.name} + {node.name}"
                x = x.args[0] if _is_reshape(x) and x.args else None
    return pairs


def _marks(gm, captured: bool, before=None) -> tuple[dict, dict]:
    """(kind, note) per node name: fused nodes (with the pair of `before` each replaced), GELUs the guard must
    leave alone (their Linear has other readers) and GELUs after a Linear that reads nothing else: in the
    `captured` graph a safe pair, in a graph after a pass one it missed."""
    kinds, notes = {}, {}
    replaced = _pairs_by_input(before) if before is not None else {}
    for node in gm.graph.nodes:
        if "linear_gelu" in str(node.target):
            kinds[node.name] = "fused"
            pair = replaced.get(getattr(node.args[0], "name", "")) if node.args else None
            approximate = node.kwargs.get('approximate', (node.args[3:4] or ['none'])[0])
            notes[node.name] = (f"{pair}, " if pair else "") + f"approximate={approximate}"
        elif _is_gelu(gm, node):
            chain = _chain(node)
            if chain and _is_linear(gm, chain[-1]):
                source = chain[-1]
                shared = next((n for n in chain if len(n.users) > 1), None)  # the product, or a view of it
                safe = "safe" if captured else "missed"
                kinds[node.name] = kinds[source.name] = "refused" if shared is not None else safe
                notes[node.name] = (_guard_note(source, shared) if shared is not None
                                    else "safe pair" if captured else "safe pair, not fused")
    return kinds, notes


def _picture(gm, title: str, caption: str = "", *, captured: bool = False, before=None):
    from checker.kit.pictures import picture_of

    kinds, notes = _marks(gm, captured, before)
    return picture_of(gm, title, kind_of=lambda n: kinds.get(n.name, ""), note_of=lambda n: notes.get(n.name, ""),
                      caption=caption)


def graph_pictures(attempt, reference, *, capture=None, model=None):
    """`make graph N=3`: the guard sample as captured (every Linear->GELU pair marked safe or not), and the
    graph after each side's fuse_linear_gelu on a fresh capture of its own."""
    from checker.kit.pictures import Panel

    if model not in (None, "guard_sample"):
        raise ValueError(f"kata 3 draws one model, guard_sample, not {model!r}")
    from katas.common import capture as capture_model
    from katas.common.capture import CAPTURE_DIALECT

    panels = []
    for method, dialect in [(m, d) for m, d in CAPTURES if capture in (None, m)] or [(capture, CAPTURE_DIALECT[capture])]:
        before = capture_model(_model(), _inputs(), method).gm
        sides = []
        for module in (attempt, reference):
            def draw(module=module):
                gm = capture_model(_model(), _inputs(), method).gm  # a fresh capture per side: rewritten in place
                fused = module.fuse_linear_gelu(gm)
                return _picture(gm, f"after fuse_linear_gelu ({method})", f"fuse_linear_gelu returned {fused}",
                                before=before)
            sides.append(picture_or_failure(draw))
        panels.append(Panel(f"guard_sample as {_dialect_words(dialect)} graph ({method}), input {INPUT_SHAPE}",
                            sides[0], sides[1],
                            before=_picture(before, method, "z = fc1(x); h = gelu(z) + z; out = gelu_tanh(fc2(h))",
                                            captured=True),
                            notes=["safe pair: the Linear feeds only its GELU (as captured)",
                                   "fused: the kata op replaced the Linear and the GELU its badge names",
                                   "guard: the pair stays apart because the Linear's output has other readers",
                                   "safe pair, not fused: the Linear feeds only its GELU, so a pass should fuse it"]))
    return panels


def _dialect_words(dialect) -> str:
    """'a MODULE', 'an ATEN', 'a CORE_ATEN' (a capture's dialect is a string or the kata's enum)."""
    name = getattr(dialect, "name", str(dialect)).upper()
    return f"{'an' if name[0] in 'AEIOU' else 'a'} {name}"


def _guard_note(product, shared) -> str:
    """Why the guard keeps a pair apart: the product, or the view of it the GELU reads, has other readers."""
    if shared is product:
        return f"guard: {product.name} has {len(product.users)} readers"
    return f"guard: {product.name}'s view {shared.name} has {len(shared.users)} readers"
