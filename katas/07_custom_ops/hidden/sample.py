"""`make diff N=7` and `make graph N=7`: what each side's fuse_with_rewriter makes of a few Dynamo graphs, and which
fused ops a training step through each side's backend runs.

Both sides' ops are registered under the same names in one process (the attempt's registration, the later one,
serves both), so the sample shows what differs between the two files: the graphs each rewrite leaves and where it
puts the fused node, not kernels. The text columns show the rewritten graph's code per model; the pictures draw the
rewritten graph beside Dynamo's graph before the rewrite, fused nodes and grad-mode switches coloured.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import torch

from checker.kit import load_module
from checker.kit.samples import guarded, picture_or_failure
from katas.common.quiet import quiet

_HIDDEN = Path(__file__).parent
probes = load_module(_HIDDEN / "probes.py", "kata07_probes_for_sample")
MODELS = ("pair nn.GELU('tanh')", "pair F.gelu(z), Linear without bias", "shared residual", "grad frozen_pair",
          "grad frozen_block")


def _rewritten(module, recipe: str) -> tuple[torch.fx.GraphModule, torch.fx.GraphModule, int]:
    """Dynamo's graph of the recipe (grad mode on), a copy before the rewrite, and what the rewrite returned."""
    model, x = probes.build(recipe)
    with quiet(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm, _, _, _ = probes._dynamo_graph(model, x)
    before = torch.fx.GraphModule(gm, gm.graph.__deepcopy__())
    return before, gm, module.fuse_with_rewriter(gm)


def _code(gm: torch.fx.GraphModule) -> list[str]:
    body = [line.strip() for line in gm.code.strip().splitlines()[1:]]
    return ["    " + line.split(";")[0] for line in body if line and not line.startswith("l_") and "= L_" not in line]


def _rewrites(module) -> str:
    lines = []
    for recipe in MODELS:
        _, gm, fused = _rewritten(module, recipe)
        lines += [f"{recipe}: fuse_with_rewriter returned {fused}", *_code(gm), ""]
    return "\n".join(lines).rstrip()


def _training(module) -> str:
    seen = probes.train(module, "pair F.gelu(z)", [[2, 3]])
    return (f"training step of 'pair F.gelu(z)' through npu_training_backend: forward ran linear_gelu "
            f"{seen['forward']['fused']}x, aten.gelu {seen['forward']['aten.gelu']}x; backward ran "
            f"linear_gelu_backward {seen['backward']['fused_backward']}x, "
            f"aten.gelu_backward {seen['backward']['aten.gelu_backward']}x")


def _report(module) -> str:
    return "\n\n".join(guarded(part, module) for part in (_rewrites, _training))


def sample_graphs(attempt, reference) -> tuple[str, str]:
    return _report(attempt), _report(reference)


def _kind_of(node) -> str:
    target = str(node.target)
    if "linear_gelu" in target:
        return "fused"
    if "set_grad_enabled" in target:
        return "grad_mode"
    if node.op == "call_function" and target in (str(torch._C._nn.linear), str(torch._C._nn.gelu)):
        return "torch"
    return ""


def _note_of(node) -> str:
    target = str(node.target)
    if "set_grad_enabled" in target:
        return f"grad {'on' if node.args and node.args[0] else 'off'}"
    return ""


def _before_and_after(module, recipe: str):
    """Dynamo's graph of the recipe before the rewrite, and a Picture of it after `module`'s fuse_with_rewriter."""
    from checker.kit.pictures import picture_of

    before, gm, fused = _rewritten(module, recipe)
    return before, picture_of(gm, f"after fuse_with_rewriter (returned {fused})", kind_of=_kind_of, note_of=_note_of)


def graph_pictures(attempt, reference, *, capture=None, model=None):
    """`make graph N=7`: each side's rewritten Dynamo graph per model, under the graph before the rewrite."""
    from checker.kit.pictures import Panel, picture_of

    if capture not in (None, "dynamo"):
        raise ValueError(f"kata 7 rewrites Dynamo graphs only, not {capture!r}")
    chosen = [m for m in MODELS if model in (None, m)]
    if not chosen:
        raise ValueError(f"kata 7 draws {', '.join(MODELS)}, not {model!r}")
    panels = []
    for recipe in chosen:
        before, reference_picture = _before_and_after(reference, recipe)
        drawn_before = picture_of(before, "Dynamo's graph (training: grad mode on)", kind_of=_kind_of, note_of=_note_of)
        attempt_picture = picture_or_failure(lambda recipe=recipe: _before_and_after(attempt, recipe)[1])
        panels.append(Panel(recipe, attempt_picture, reference_picture, before=drawn_before))
    return panels
