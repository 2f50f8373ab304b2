"""`make diff N=8`'s sample: what each side's lower() makes of three models — one line per node of the lowered
graph, each NPU program shown as the ops it holds — and the signature's parameters, buffers and outputs."""
from __future__ import annotations

from pathlib import Path

import torch

from checker.kit import load_module
from checker.kit.samples import guarded
from katas.common.quiet import quiet

_HIDDEN = Path(__file__).parent
probes = load_module(_HIDDEN / "probes.py", "kata08_probes_for_sample")
MODELS = ("layer_norm_between", "flatten_views", "float64_head")


def _line(node: torch.fx.Node) -> str:
    args = ", ".join(a.name if isinstance(a, torch.fx.Node) else repr(a) for a in node.args)
    if str(node.target) == probes.RUN_PROGRAM:
        from katas.common.npu.aot import unpack

        ops = [str(n.target).removeprefix("aten.").removesuffix(".default") for n in unpack(node.args[0]).graph.nodes
               if n.op == "call_function"]
        inputs = ", ".join(a.name for a in node.args[1])
        return f"{node.name} = NPU program [{', '.join(ops)}]({inputs})"
    target = str(node.target)
    target = target.removeprefix("aten.").removesuffix(".default") if target.startswith("aten.") else node.target.__name__
    return f"{node.name} = {target}({args})"


def _lowered(module, recipe: str) -> str:
    with quiet():
        ep = module.lower(probes.build(recipe), probes.inputs(recipe))
    sig = ep.graph_signature
    lines = [_line(n) for n in ep.graph.nodes if n.op == "call_function"]
    lines.append(f"parameters {list(sig.parameters)}, buffers {list(sig.buffers)}, outputs {list(sig.user_outputs)}")
    return "\n".join("  " + line for line in lines)


def sample_graphs(attempt, reference) -> tuple[str, str]:
    mine, theirs = [], []
    for recipe in MODELS:
        header = f"lower(`{recipe}`: {probes.ZOO[recipe].text})"
        theirs += [header, guarded(_lowered, reference, recipe), ""]
        mine += [header, guarded(_lowered, attempt, recipe), ""]
    return "\n".join(mine).rstrip(), "\n".join(theirs).rstrip()


def _as_partitions(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of the lowered graph in which each NPU program is a call_module of its unpacked graph, as the
    partitioner left it before the delegate: what checker.kit.pictures draws as framed NPU partitions."""
    import copy

    from katas.common.npu.aot import unpack

    drawn = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    for i, node in enumerate([n for n in drawn.graph.nodes if str(n.target) == probes.RUN_PROGRAM]):
        name = f"npu_program_{i}"
        drawn.add_submodule(name, copy.deepcopy(unpack(node.args[0])))
        with drawn.graph.inserting_before(node):
            call = drawn.graph.call_module(name, tuple(node.args[1]))
        node.replace_all_uses_with(call)
        drawn.graph.erase_node(node)
    drawn.recompile()
    return drawn


def graph_pictures(attempt, reference, *, capture=None, model=None):
    """`make graph N=8`: each side's lower() of a zoo model (`layer_norm_between` unless `model`), NPU programs
    framed with the ops they hold, the ops left on the CPU blue, host<->device transfers red."""
    from checker.kit.pictures import Panel, flattened_partitions
    from checker.kit.samples import picture_or_failure

    if capture not in (None, "export"):
        raise ValueError(f"kata 8 draws its own export (capture 'export'), not {capture!r}")
    if model is not None and model not in probes.ZOO:
        raise ValueError(f"no sample model {model!r}; kata 8 draws {', '.join(probes.ZOO)}")
    panels = []
    for recipe in [model] if model else MODELS:
        sides = []
        for module in (attempt, reference):
            def draw(module=module):
                with quiet():
                    ep = module.lower(probes.build(recipe), probes.inputs(recipe))
                return flattened_partitions(_as_partitions(ep.graph_module), "lower()",
                                            is_partition=lambda target, sub: target.startswith("npu_program_"))
            sides.append(picture_or_failure(draw))
        panels.append(Panel(f"lower(`{recipe}`: {probes.ZOO[recipe].text})", sides[0], sides[1]))
    return panels
