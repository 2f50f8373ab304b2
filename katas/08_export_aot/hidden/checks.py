"""Hidden checks for kata 8 (the ahead-of-time path: export with a dynamic batch, decompose to the NPU's opset,
legalise, partition, delegate, save and load). Learners: solve the kata from README.md, not from here.

The attempt's code runs in the worker (probes.py) and returns data. Every right answer comes from this process:
eager outputs of the same recipes, torch's own decomposition table, the rule of which nodes the NPU runs
(`runs_on_npu`, the rule the lesson states, applied to node descriptions), the device's counters (the worker's
DEVICE is a client of the one here), and a fresh Python process that loads the saved programs. Structure is
checked beside every number: a lowering that delegates nothing is numerically perfect.
Nothing is compared with the reference.
"""
from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import torch

import katas
from checker.kit import load_module
from checker.kit import CheckFailed, Checks, expect, fuzz
from katas.common.models import CPU_ONLY_ACTIVATIONS, NPU_FRIENDLY_ACTIVATIONS, describe
from katas.common.npu import DEVICE, KERNELS, LAYOUT_OPS, NPU_DTYPES, NPU_OPS, DeviceService
from katas.common.npu.aot import REPLAY_COMMAND, dump_tensors, load_tensors
from katas.common.strategies import aot_program_plans, mlp_specs

_HIDDEN = Path(__file__).parent
probes = load_module(_HIDDEN / "probes.py", "kata08_export_aot_probes")
ZOO = probes.ZOO

CHECKS = Checks()
CHECKS.services.update(DeviceService().handlers())
CHECKS.worker_setup.append("katas.common.npu:connect_to_device_service")

BATCHES = [1, 2, 7]  # the example batch is 3: each of these is a size the export never saw
NPU_DTYPE_KINDS = {"tensor:" + str(d).removeprefix("torch.") for d in NPU_DTYPES}
NOOPS = ("aten.alias.default", "aten.clone.default")
RESHAPING = ("aten.unsqueeze.default", "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default",
             "aten._unsafe_view.default", "aten.reshape.default")
REPLAY_TIME_LIMIT = 120
# the zoo models each check runs (probes.ZOO), by what they vary
EXPORT_CASES = ("mlp", "flatten_views", "two_inputs")  # one input, views, two inputs with independent batches
LEGALISE_CASES = ("flatten_views", "aliases", "slices_and_views", "batch_not_first", "attention", "view_dtypes",
                  "copies", "layouts", "batch_slices", "input_views")
LEFT_ALONE_CASES = (("mlp", 1), ("layer_norm_between", 1), ("gram", 1), ("float64_head", 1),
                    ("slices_and_views", 2), ("copies", 2), ("layouts", 2), ("batch_slices", 2), ("input_views", 2))  # (recipe, how many times legalise runs)
SUPPORT_CASES = (("layer_norm_between", False), ("float64_head", False), ("flatten_views", False),
                 ("scaled_by_buffer", False), ("view_dtypes", False), ("slices_and_views", True),
                 ("mixed_dtypes", False), ("mixed_dtypes", True))


def batches_for(recipe) -> list[int]:
    """The batch sizes a recipe's programs run on: BATCHES, or the recipe's own when its export guards the batch."""
    own = ZOO[recipe].batches if isinstance(recipe, str) else None
    return list(own) if own else BATCHES


def has_kernel(target: str) -> bool:
    """The overload named `target` ("aten.view.dtype") takes the arguments of the NPU's kernel for its op."""
    namespace, name, overload = target.split(".")
    op = getattr(getattr(getattr(torch.ops, namespace), name), overload)
    parameters = inspect.signature(KERNELS[name]).parameters
    return all(argument.name in parameters for argument in op._schema.arguments)


def runs_on_npu(node: dict) -> bool:
    """The lesson's rule: an op in NPU_OPS through an overload its kernel takes, reading only tensors of NPU dtypes
    (no host-computed size), making at least one tensor, all of NPU dtypes. Placeholders, outputs and get_attr are
    not compute."""
    return (node["op"] == "call_function" and node["canonical"] in NPU_OPS and has_kernel(node["target"])
            and all(kind in NPU_DTYPE_KINDS for kind in node["inputs"])
            and bool(node["outputs"]) and all(kind in NPU_DTYPE_KINDS for kind in node["outputs"]))


def short(node: dict) -> str:
    target = node["target"].removeprefix("aten.").removesuffix(".default")
    kinds = ", ".join(k.removeprefix("tensor:") for k in node["inputs"])
    if node.get("memory_format"):
        kinds += f", memory_format={node['memory_format']}"
    return f"{node['name']} = {target}({kinds})"


def model_text(recipe) -> str:
    if isinstance(recipe, dict):
        return "the model of this plan:\n  " + probes.describe_plan(recipe)
    if isinstance(recipe, str) and ZOO[recipe].more_inputs:
        shapes = [(probes.EXAMPLE_BATCH + 2 * i, *f) for i, f in enumerate((ZOO[recipe].features,
                                                                            *ZOO[recipe].more_inputs))]
        return f"`{recipe}` ({ZOO[recipe].text}), example inputs {', '.join(map(str, shapes))}"
    if isinstance(recipe, str):
        shape = (probes.EXAMPLE_BATCH, *ZOO[recipe].features)
        return f"`{recipe}` ({ZOO[recipe].text}), example input {shape}"
    return describe(recipe)


def _batches_text(recipe, batch) -> str:
    inputs = 1 + (len(ZOO[recipe].more_inputs) if isinstance(recipe, str) else 0)
    if isinstance(recipe, dict):
        inputs = recipe["inputs"]
    if inputs == 1:
        return f"batch size {batch}"
    return f"batch sizes {', '.join(str(batch + 2 * i) for i in range(inputs))} (one per input)"


def _why_it_failed(error: str) -> str:
    """What to look at, for the errors whose cause is not where they are raised."""
    if "must have the same dtype" in error or "expected scalar type" in error:
        return ("\nTwo tensors of different dtypes met in one op: a cast (aten._to_copy) is missing from the graph. "
                "legalise removes no cast: a cast is real work, not an alias. README.md, 'Step 2'.")
    if "is invalid for input of size" in error:
        return ("\nA view's sizes do not fit the tensor's number of elements: the sizes legalise wrote hold an "
                "example's size where the graph's size is symbolic. A SymInt in node.meta[\"val\"].shape is the "
                "batch, written -1 wherever it sits: the batch of any input (each has a symbol of its own), bare "
                "(s77) or computed from it (2*s77 after flatten(0, 1)); int() of it is the example's. A node with "
                "two symbolic sizes (1 x batch x batch) cannot be written with one -1: leave it as it is. "
                "README.md, 'Step 2'.")
    if "Guard failed" in error and ("<=" in error or ">=" in error):
        return ("\nThe program refuses this batch size: its range for the batch does not hold it. A Dim's max= "
                "refuses larger batches, and a min= above 2 refuses the smaller ones (torch records every dynamic "
                "size as at least 2 yet runs batch 1). Give no max, and no min above 2. README.md, 'Step 1'.")
    if "Guard failed" in error and "==" in error:
        return ("\nThe program checks a size against the example's: something in it holds the example's size where "
                "the size is symbolic. Either export fixed a batch (a Dim for dimension 0 of every input), or a view "
                "legalise wrote holds the int() of a symbolic size (any input's batch, bare or computed from it: "
                "write -1). README.md, 'Step 1' and 'Step 2'.")
    if "view size is not compatible" in error or "Cannot view" in error:
        return ("\nA view reads a tensor whose strides it cannot view: a clone or copy that names a memory format "
                "(torch.contiguous_format, torch.channels_last or torch.channels_last_3d, after a transpose or "
                "permute) was removed, and the view after it is legal only on its output. Every memory format other "
                "than preserve_format sets the output's strides: such a clone stays. README.md, 'Step 2'.")
    if "NPU cannot compile" in error and "(read by" in error and "the NPU runs" in error:
        return ("\nA node on the NPU reads a tensor of a dtype the NPU lacks: your is_npu_node said yes to it. Its "
                "output dtype does not tell (type promotion: a float32 tensor times a 0-dim float64 or int64 one is "
                "float32); every input node's value, at any position, must be a float32, float16 or bfloat16 "
                "tensor. README.md, 'Step 3'.")
    if "has no attribute 'fused_" in error or "references nonexistent attribute" in error:
        return STALE_GRAPH
    if "Expected a value of type" in error and "found type 'list'" in error:
        return ("\nAn op received a whole list where it takes one tensor: the list npu_aot.run_program returns. "
                "Its outputs are a list, so the users of a partition with one output read operator.getitem(run, 0), "
                "however many users the call_module has; only a partition with several outputs (its submodule's "
                "output node holds a tuple) already has getitem users. README.md, 'Step 4: delegate'.")
    if "was used before it has been defined" in error:
        return ("\nA node reads one that comes after it in the graph: insert each new node before the call_module it "
                "replaces (graph.inserting_before), in gm.graph as fuse_partitions left it (a `graph = gm.graph` "
                "taken before the fuse is a graph nobody runs any more). README.md, 'Step 4: delegate'.")
    if "bitwise_and" in error and "not implemented for" in error:
        return ("\nAn integer op (`& 0xFFFF`) got a floating-point tensor: the int32 it reads was made by "
                "`h.view(torch.int32)`, aten.view.dtype. Rewritten into aten.view with sizes, it keeps the float "
                "dtype. aten.view.dtype has no sizes and is not a reshape: legalise leaves it alone. README.md, "
                "'Step 2'.")
    return ""


STALE_GRAPH = ("\nThe graph calls a partition's submodule (fused_0, ...) that the graph module no longer has: the "
               "graph you rewrote is not the one gm runs. fuse_partitions installs a new Graph object on gm; a "
               "`graph = gm.graph` taken before it is a graph nobody runs any more. Read gm.graph after the fuse. "
               "README.md, 'Step 4: delegate'.")


def expect_outputs(recipe, got: dict, *, state_seed: int | None = None, what: str) -> None:
    """Every batch's output equals eager's (with the same weights), or the message says which batch and how."""
    want = probes.eager(recipe, sorted(got), state_seed)
    for batch in sorted(got):
        out = got[batch]
        expect(not isinstance(out, str),
               f"{what} failed on {_batches_text(recipe, batch)} of {model_text(recipe)}:\n  {str(out)[:500]}"
               f"{_why_it_failed(str(out)) if isinstance(out, str) else ''}")
        try:
            torch.testing.assert_close(out, want[batch])
        except AssertionError as exc:
            raise CheckFailed(f"{what} differs from the eager model on {_batches_text(recipe, batch)} of "
                              f"{model_text(recipe)}:\n  {str(exc).strip().splitlines()[0]}") from None


# --- Step 1: export and decompose ----------------------------------------------------------------------------

def _exported(ctx, recipe) -> dict:
    seen = ctx.probe(probes.exported, recipe, BATCHES)
    expect(seen["type"] != "raised",
           f"export_for_npu raised on {model_text(recipe)}:\n  {seen.get('error')}\nEach input's batch is its own: "
           f"give dimension 0 of every input a Dim of its own name (Dims of one name are one symbol, so the inputs "
           f"would have to share a batch). README.md, 'Step 1'.")
    expect(seen["type"] == "ExportedProgram",
           f"export_for_npu returned a {seen['type']}, not the torch.export.ExportedProgram of "
           f"ep.run_decompositions(...). README.md, 'Step 1'.")
    return seen


@CHECKS.check(stage="export", weight=2)
def export_keeps_the_batch_dynamic(ctx):
    "export_for_npu exports with dimension 0 symbolic: the program runs on batch sizes the export never saw"
    for recipe in EXPORT_CASES:
        seen = _exported(ctx, recipe)
        fixed = [f"input {i + 1} to {size}" for i, size in enumerate(seen["batch"]) if size.isdigit()]
        expect(not fixed,
               f"export_for_npu fixed the batch of {', '.join(fixed)} of {model_text(recipe)}: the exported program "
               f"accepts only that size. Pass dynamic_shapes with a torch.export.Dim for dimension 0 of every input, "
               f"each its own. README.md, 'Step 1'.")
        bounded = [f"input {i + 1} to [{lower}, {upper}]" for i, bounds in enumerate(seen["ranges"])
                   if bounds is not None for lower, upper in [bounds] if upper != "int_oo" or int(lower) > 2]
        expect(not bounded,
               f"export_for_npu bounded the batch of {', '.join(bounded)} of {model_text(recipe)} "
               f"(ep.range_constraints): the program refuses every batch outside that range when it runs (\"Guard "
               f"failed\"), however large the model's users' batches grow. Give no max, and no min above 2. "
               f"README.md, 'Step 1'.")
        expect_outputs(recipe, seen["outputs"], what="ep.module() of export_for_npu")


def _op_texts(nodes: list[dict]) -> list[str]:
    return [n["target"] for n in nodes]


@CHECKS.check(stage="decompose", weight=2)
def table_decomposes_all_but_what_the_npu_runs(ctx):
    "npu_decomposition_table() is torch's default table without the ops in NPU_OPS, and with every other"
    seen = ctx.probe(probes.table)
    expect(seen["ops"] is not None,
           f"npu_decomposition_table() returned a {seen['type']}; run_decompositions takes a dict-like table, "
           f"op -> decomposition: start from torch.export.default_decompositions(). README.md, 'Step 1'.")
    default = set(probes.default_table_ops())
    native = {op for op in default if op.split(".")[1] in NPU_OPS}
    kept_native = sorted(set(seen["ops"]) & native)
    expect(not kept_native,
           f"your table still decomposes ops the NPU runs as they are: {', '.join(kept_native[:6])}. An op is "
           f"the NPU's whatever its overload (.default, .out, .int, ...), and the table holds each overload as a key "
           f"of its own: decomposed, it reaches the device in pieces (silu as sigmoid and mul: two launches instead "
           f"of one). Delete every overload of the NPU's ops from the table. README.md, 'Keep what the NPU runs'.")
    dropped = sorted(default - native - set(seen["ops"]), key=lambda op: (not op.startswith("aten."), op))
    expect(not dropped,
           f"your table no longer decomposes {len(dropped)} op(s) the NPU does not run, e.g. "
           f"{', '.join(dropped[:4])}: they would reach the graph as non-core ops no kernel of the device or of the "
           f"CPU fallback promises to handle. Remove only the NPU's own ops from the default table. "
           f"README.md, 'Step 1'.")


@CHECKS.check(stage="decompose", weight=2)
def exported_graphs_are_core_aten_plus_npu_ops(ctx):
    "export_for_npu's graphs hold core ATen ops and the NPU's own ops (linear and silu stay whole)"
    for recipe in ("silu_mlp", "layer_norm_between", "flatten_views"):
        seen = _exported(ctx, recipe)
        stray = sorted({n["target"] for n in seen["ops"] if not n["core"] and n["canonical"] not in NPU_OPS
                        and n["target"] not in probes.EXPORT_IR_EXTRAS})
        expect(not stray,
               f"export_for_npu's graph of {model_text(recipe)} still holds {', '.join(stray)}: neither core ATen "
               f"nor an op the NPU runs. Did you call ep.run_decompositions(npu_decomposition_table())? "
               f"README.md, 'Step 1'.")
        ops = _op_texts(seen["ops"])
        linears = ops.count("aten.linear.default")
        expect(linears == 2,
               f"export_for_npu's graph of {model_text(recipe)} has {linears} aten.linear node(s) for its 2 "
               f"Linear layers: {', '.join(o.removeprefix('aten.') for o in ops)}. The NPU runs linear as one op; "
               f"keep it out of the decomposition. README.md, 'Keep what the NPU runs'.")
        if recipe == "silu_mlp":
            expect("aten.silu.default" in ops,
                   f"export_for_npu's graph of {model_text(recipe)} has no aten.silu: "
                   f"{', '.join(o.removeprefix('aten.') for o in ops)}. silu is not core ATen, so the default "
                   f"table splits it into sigmoid and mul; the NPU runs it whole. README.md, 'Keep what the NPU runs'.")


# --- Step 2: legalise ---------------------------------------------------------------------------------------

def _legalised(ctx, recipe: str, times: int = 1) -> dict:
    seen = ctx.probe(probes.legalised, recipe, batches_for(recipe), times)
    expect(isinstance(seen["returned"], int),
           f"legalise returned {seen['returned']}; it returns how many nodes it rewrote or removed (an int).")
    return seen


@CHECKS.check(stage="legalise", weight=2)
def legalise_removes_aliases_and_reshapes(ctx):
    "after legalise: no alias, clone, full slice, unsqueeze, squeeze or reshape; views have int sizes; same outputs"
    for recipe in LEGALISE_CASES:
        seen = _legalised(ctx, recipe)
        expect(not seen["stale_code"],
               f"after legalise on the graph of {model_text(recipe)}, gm.code is not the code of gm.graph: gm(...) "
               f"still runs the graph as it was before legalise. gm.code is generated from the graph only by "
               f"gm.recompile(): call it after changing gm.graph. README.md, 'Step 2'.")
        kept = lambda nodes: [n for n in nodes if n["sets_layout"] and not n["plain_copy"]]  # noqa: E731
        expect(len(kept(seen["after"])) == len(kept(seen["before"])),
               f"legalise removed a clone or copy that sets a memory format from the graph of {model_text(recipe)}: "
               f"{'; '.join(short(n) for n in kept(seen['before']))} were there, {len(kept(seen['after']))} are "
               f"left. A clone or _to_copy naming any memory format other than preserve_format (contiguous_format, "
               f"channels_last, channels_last_3d) sets its output's strides, and the view after it is legal only on "
               f"its output: `o.transpose(1, 2).reshape(B, N, C)` exports as clone(memory_format=torch."
               f"contiguous_format), then a view; `h.transpose(2, 3).contiguous(memory_format=torch.channels_last)"
               f".view(B, 2, -1)` as clone(memory_format=torch.channels_last), then a view. Keep it. README.md, "
               f"'Step 2'.")
        casts = lambda nodes: [n for n in nodes if n["target"] == "aten._to_copy.default" and not n["plain_copy"]]  # noqa: E731
        expect(len(casts(seen["after"])) == len(casts(seen["before"])),
               f"legalise removed a cast from the graph of {model_text(recipe)}: "
               f"{'; '.join(short(n) for n in casts(seen['before']))} were there, {len(casts(seen['after']))} are "
               f"left. A _to_copy that changes the dtype or sets a memory format is real work, not an alias: keep it "
               f"(only a copy that changes nothing may go). README.md, 'Step 2'.")
        dtype_views = lambda nodes: [n for n in nodes if n["target"] == "aten.view.dtype"]  # noqa: E731
        expect(len(dtype_views(seen["after"])) == len(dtype_views(seen["before"])),
               f"legalise rewrote {'; '.join(short(n) for n in dtype_views(seen['before']))} in the graph of "
               f"{model_text(recipe)}: aten.view.dtype reads the same bytes as another dtype; it has no sizes and is "
               f"not a reshape: leave it alone. README.md, 'Step 2'.")
        partial = lambda nodes: [n for n in nodes if n["target"] == "aten.slice.Tensor" and not n["full_slice"]]  # noqa: E731
        kept_names = {n["name"] for n in partial(seen["after"])}
        gone = [n for n in partial(seen["before"]) if n["name"] not in kept_names]
        expect(len(partial(seen["after"])) == len(partial(seen["before"])),
               f"legalise removed a slice that keeps only part of its input from the graph of {model_text(recipe)}: "
               f"{'; '.join(short(n) + ' on ' + str(n['slice']) for n in (gone or partial(seen['before'])))}. "
               f"Only a slice from 0 to the end (sys.maxsize) with step 1 is its input under another name. An end "
               f"that is a number keeps that many rows whatever the example's size: on the batch, h[:3] exported "
               f"with 3 rows keeps 3 rows of a batch of 7; comparing the end with the example's size (an int() of "
               f"the symbolic batch) is the example, not the program. README.md, 'Step 2'.")
        expect_outputs(recipe, seen["outputs"], what="the program after your legalise")
        left = [short(n) for n in seen["after"] if (n["target"] in NOOPS + RESHAPING and not n["sets_layout"])
                or (n["target"] == "aten.slice.Tensor" and n["full_slice"])]
        expect(not left,
               f"after legalise, the graph of {model_text(recipe)} still holds {'; '.join(left)}. The NPU does not "
               f"run these: an alias, a plain clone (no memory format, or torch.preserve_format: the default spelled "
               f"out) or a slice of everything is its input under another name (remove it), and "
               f"unsqueeze/squeeze/reshape are views (write aten.view). README.md, 'Step 2'.")
        host_sized = [short(n) for n in seen["after"] if n["target"] == "aten.view.default" and "SymInt" in n["inputs"]]
        expect(not host_sized,
               f"after legalise, the graph of {model_text(recipe)} has views whose sizes are computed on the host: "
               f"{'; '.join(host_sized)}. A SymInt input keeps the view off the NPU: write the sizes as ints, "
               f"the batch as -1. README.md, 'Step 2'.")
        dead = [n["name"] for n in seen["after"] if n["unread_size"]]
        expect(not dead,
               f"after legalise, the graph of {model_text(recipe)} still holds {', '.join(dead)}: aten.sym_size.int "
               f"nodes (and the size arithmetic on them, the mul of flatten(0, 1)) that nothing reads any more (the "
               f"views that read them now say -1). After erasing, gm.graph.eliminate_dead_code() drops them. "
               f"README.md, 'Step 2'.")
        plain_copies = lambda nodes: [n for n in nodes if n["plain_copy"]]  # noqa: E731
        removed_copies = len(plain_copies(seen["before"])) - len(plain_copies(seen["after"]))
        want = ZOO[recipe].legalised + removed_copies
        also = (f", plus the {removed_copies} copy(ies) or clone(s) that change nothing you removed" if removed_copies
                else "")
        expect(seen["returned"] == want,
               f"legalise returned {seen['returned']} for the graph of {model_text(recipe)}, whose aliases, clones, "
               f"full slices and reshapes number {ZOO[recipe].legalised}{also}: return how many of those you removed "
               f"or rewrote (not counting the sym_size nodes left unread, nor views that were legal already).")


@CHECKS.check(stage="legalise", weight=1)
def legalise_leaves_legal_graphs_alone(ctx):
    "legalise on a graph with nothing to rewrite (or legalised already) returns 0 and changes no op"
    for recipe, times in LEFT_ALONE_CASES:
        seen = _legalised(ctx, recipe, times)
        what = {1: "which holds nothing to rewrite", 2: "legalised once already"}[times]
        if recipe == "gram":
            what = "whose only view has two symbolic sizes (batch x batch), which -1 cannot express"
        elif recipe == "float64_head":
            what = "whose casts (aten._to_copy) are real work"
        casts = lambda nodes: [n for n in nodes if n["target"] == "aten._to_copy.default" and not n["plain_copy"]]  # noqa: E731
        expect(len(casts(seen["after"])) == len(casts(seen["before"])),
               f"legalise removed a cast from the graph of {model_text(recipe)}: "
               f"{'; '.join(short(n) for n in casts(seen['before']))} were there, {len(casts(seen['after']))} are "
               f"left. A cast (aten._to_copy) changes the dtype: it is real work, not an alias, and legalise keeps it "
               f"(dtypes the NPU lacks stay on the CPU, step 3). README.md, 'Step 2'.")
        removed = Counter(_op_texts(seen["before"])) - Counter(_op_texts(seen["after"]))
        added = Counter(_op_texts(seen["after"])) - Counter(_op_texts(seen["before"]))
        change = "; ".join([f"removed {', '.join(removed.elements())}"] * bool(removed)
                           + [f"added {', '.join(added.elements())}"] * bool(added))
        if "aten._assert_tensor_metadata.default" in removed:
            change += (" (the _assert_tensor_metadata export writes before a cast is kept too: legalise removes "
                       "nothing it was not asked to. README.md, 'Step 2')")
        expect(_op_texts(seen["after"]) == _op_texts(seen["before"]) and seen["returned"] == 0,
               f"legalise on {model_text(recipe)}, {what}, returned {seen['returned']}"
               f"{' and ' + change if change else ''}: it should return 0 and change no op.")
        expect_outputs(recipe, seen["outputs"], what="the program after your legalise" if times == 1 else
                       "the program after legalising it twice (the first legalise already changed what it computes: "
                       "it removed or rewrote a node that was real work)")


# --- Step 3: what runs on the NPU -----------------------------------------------------------------------------

@CHECKS.check(stage="support", weight=2)
def is_npu_node_follows_the_device(ctx):
    "is_npu_node: NPU ops on float32/16/bf16 tensors only; not placeholders or outputs, float64, or host sizes"
    for recipe, legalise_first in SUPPORT_CASES:
        for node in ctx.probe(probes.support_verdicts, recipe, legalise_first):
            want = runs_on_npu(node)
            if node["verdict"] == want:
                continue
            if node["op"] != "call_function":
                why = f"a {node['op']} node is not compute: the partitioner must not pull it into a partition"
            elif node["canonical"] not in NPU_OPS:
                why = f"{node['target']} is not in NPU_OPS"
            elif not has_kernel(node["target"]):
                why = (f"{node['target']} is named {node['canonical']!r} like an NPU op, but the NPU's kernel for it "
                       f"takes other arguments (KERNELS[{node['canonical']!r}] in katas/common/npu/device.py): this overload "
                       f"has no NPU kernel, and NPU.compile refuses it")
            elif not want and node["outputs"] and all(kind in NPU_DTYPE_KINDS for kind in node["outputs"]):
                foreign = [(i, name, kind) for i, (name, kind) in enumerate(zip(node["input_names"], node["inputs"]))
                           if kind not in NPU_DTYPE_KINDS]
                sizes = [f"input {i + 1}, {name}" for i, name, kind in foreign if kind == "SymInt"]
                where = ("" if any(i == 0 for i, _, _ in foreign) else
                         f"; is_npu_node looks at every input, not only the first (this is input {foreign[0][0] + 1})")
                if any(kind == "SymInt" for _, _, kind in foreign):
                    why = (f"{'; '.join(sizes)}, is a SymInt: a size computed on the host (aten.sym_size), not a "
                           f"tensor. An NPU program takes tensors only, so a node that reads a host-computed size "
                           f"cannot be inside it (legalise writes a reshape's sizes as ints, the batch as -1; a view "
                           f"that still reads a SymInt stays on the CPU){where}")
                else:
                    listed = "; ".join(f"input {i + 1}, {name}, is {kind.removeprefix('tensor:')}"
                                       for i, name, kind in foreign)
                    why = (f"its output is {', '.join(k.removeprefix('tensor:') for k in node['outputs'])}, but "
                           f"{listed}. Type promotion hides it (a 0-dim float64 or int64 tensor times a float32 one "
                           f"makes float32), and the NPU cannot hold that input: every input node's value, at any "
                           f"position, a placeholder or a node's result, must be a float32, float16 or bfloat16 "
                           f"tensor{where}")
            elif not want:
                why = ("it reads or makes a value the NPU cannot hold: "
                       f"inputs ({', '.join(node['inputs']) or 'none'}), outputs ({', '.join(node['outputs'])}); "
                       "the NPU takes float32, float16 and bfloat16 tensors, not float64, not SymInts")
            else:
                why = f"{node['canonical']} is in NPU_OPS and every value it reads and makes is an NPU tensor"
            stage = "after your legalise" if legalise_first else "as exported"
            raise CheckFailed(f"is_npu_node({short(node) if node['op'] == 'call_function' else node['name']}) "
                              f"returned {node['verdict']}, expected {want}: {why}. (Graph of {model_text(recipe)}, "
                              f"{stage}.) README.md, 'Step 3'.")


# --- Step 4: delegate ----------------------------------------------------------------------------------------

def _lowered(ctx, recipe, *, state_seed: int | None = None, save_to: str | None = None) -> dict:
    seen = ctx.probe(probes.lowered, recipe, BATCHES, state_seed, save_to)
    expect(seen["type"] != "raised",
           f"lower raised on {model_text(recipe)}:\n  {seen.get('error')}{_why_it_failed(str(seen.get('error')))}")
    expect(seen["type"] == "ExportedProgram",
           f"lower returned a {seen['type']}, not the ExportedProgram whose graph calls the NPU. README.md, 'Step 4'.")
    nested = seen["nested_getitems"]
    expect(not nested,
           f"lower's graph of {model_text(recipe)} reads an output of an NPU program as rows of its first output: "
           f"{'; '.join(nested[:2])}. A partition with several outputs already has getitem users of its "
           f"call_module, one per output: point them at run_program's list itself. Only a partition with one "
           f"output needs getitem(run, 0). README.md, 'Step 4'.")
    return seen


# every kind of island: whole model, native silu, a CPU op between, legalised views, float64, a buffer, matmul;
# (`aliases` and `slices_and_views` are legalise's: lowering them adds nothing but time)
DELEGATED = ("mlp", "silu_mlp", "layer_norm_between", "flatten_views", "float64_head", "scaled_by_buffer", "gram",
             "three_outputs", "two_inputs", "attention", "mixed_dtypes", "layouts", "input_views")


def expect_delegated(recipe, seen: dict, programs: int | None) -> None:
    """Every program holds only NPU ops; no op the NPU runs is left outside one; as many programs as NPU islands;
    no submodule left behind, no sym_size nothing reads."""
    foreign = sorted({n["target"] for n in seen["outside"]
                      if not n["target"].startswith("aten.") and n["target"] not in probes.EXPORT_IR_EXTRAS
                      and not n["size_math"]})
    expect(not foreign,
           f"lower's graph of {model_text(recipe)} calls {', '.join(foreign)}: the NPU's runtime knows one op, "
           f"torch.ops.npu_aot.run_program (katas/common/npu/aot.py). An op of your own exists only where your "
           f"module was imported, so a saved program calling it loads nowhere else. README.md, 'Step 4'.")
    unreadable = [p["error"] for p in seen["programs"] if p.get("unreadable")]
    expect(not unreadable, f"a program in lower's graph of {model_text(recipe)} cannot be read by the NPU runtime: "
                           f"{unreadable[:1]}. Make each one with katas.common.npu.aot.pack(partition). README.md, "
                           f"'Step 4'.")
    unrunnable = [p["error"] for p in seen["programs"] if "error" in p and not p.get("unreadable")]
    expect(not unrunnable,
           f"a program in lower's graph of {model_text(recipe)} unpacks, but its graph does not run on the fake "
           f"values (meta[\"val\"]) of the nodes run_program is given: {unrunnable[:1]}. Pass the partition's "
           f"inputs in the order of its placeholders, each a node that carries meta[\"val\"]. README.md, 'Give new "
           f"nodes meta[\"val\"]'.")
    for program in seen["programs"]:
        refused = [short(n) for n in program["ops"] if not runs_on_npu(n) and n["target"] != "getitem"]
        expect(not refused,
               f"lower's graph of {model_text(recipe)} sends to the NPU {'; '.join(refused)}, which it does not run. "
               f"README.md, 'Step 3'.")
    stranded = [n for n in seen["outside"] if runs_on_npu(n) and n["canonical"] not in LAYOUT_OPS]
    refused = [short(n) for n in stranded if n.get("verdict") is not True]
    expect(not refused,
           f"lower's graph of {model_text(recipe)} leaves on the CPU {'; '.join(refused)}, which the NPU runs: "
           f"your is_npu_node says no to it (it returned "
           f"{', '.join(sorted({repr(n.get('verdict')) for n in stranded if n.get('verdict') is not True}))}), so "
           f"the partitioner never takes it. An op of NPU_OPS through an overload its kernel takes, reading and "
           f"making NPU tensors, runs on the NPU. README.md, 'Step 3'.")
    expect(not stranded,
           f"lower's graph of {model_text(recipe)} leaves on the CPU {'; '.join(short(n) for n in stranded)}, which "
           f"the NPU runs (your is_npu_node says so too). A partition of one node is still a partition: "
           f"CapabilityBasedPartitioner drops them unless allows_single_node_partition=True. README.md, 'Step 4'.")
    expect(not seen["leftover_submodules"],
           f"lower's graph module of {model_text(recipe)} still holds the submodule(s) "
           f"{', '.join(seen['leftover_submodules'])}, which no node calls: the partitions' graphs, left behind. "
           f"Erase the call_module node and delattr its submodule. README.md, 'Step 4'.")
    dead = [n["name"] for n in seen["outside"] if n["unread_size"]]
    expect(not dead,
           f"lower's graph of {model_text(recipe)} holds {', '.join(dead)}: aten.sym_size.int nodes (and the size "
           f"arithmetic on them, the mul of flatten(0, 1)) that nothing reads. legalise ends with "
           f"gm.graph.eliminate_dead_code(), which drops them. README.md, 'Step 2'.")
    if programs is not None:
        got = len(seen["programs"])
        expect(got == programs,
               f"lower's graph of {model_text(recipe)} runs {got} NPU program(s); its NPU ops form {programs} "
               f"connected island(s) between CPU ops, one program each (each program costs a launch of its own "
               f"and a copy of its inputs to the device). README.md, 'Step 4'.")


@CHECKS.check(stage="delegate", weight=3)
def lower_runs_each_npu_island_as_one_program(ctx):
    "lower: each island of NPU ops is one npu_aot.run_program call, the rest stays ATen; outputs equal eager's"
    for recipe in DELEGATED:
        DEVICE.reset()
        seen = _lowered(ctx, recipe)
        expect_outputs(recipe, seen["outputs"], what="ep.module() of lower's program")
        expect_delegated(recipe, seen, ZOO[recipe].programs)
        launches, want = DEVICE.stats.launches, ZOO[recipe].launches * len(BATCHES)
        expect(launches == want,
               f"running lower's program of {model_text(recipe)} on {len(BATCHES)} batches made {launches} NPU "
               f"launch(es); its NPU ops need {ZOO[recipe].launches} per call, {want} in all. "
               f"{DEVICE.stats.summary()}")


@CHECKS.check(stage="delegate", weight=2)
def weights_stay_inputs_of_the_program(ctx):
    "lower keeps every parameter and buffer in the signature, read by the graph: new weights reach the NPU"
    for recipe in ("mlp", "scaled_by_buffer"):
        seen = _lowered(ctx, recipe, state_seed=7)
        model = probes.build(recipe)
        want_params = sorted(name for name, _ in model.named_parameters())
        want_buffers = sorted(name for name, _ in model.named_buffers())
        sig = seen["signature"]
        expect(sig["parameters"] == want_params and sig["buffers"] == want_buffers,
               f"lower's program of {model_text(recipe)} names parameters {sig['parameters']} and buffers "
               f"{sig['buffers']} in its signature; the model has {want_params} and {want_buffers}. README.md, "
               f"'The signature'.")
        expect(not sig["unread"] and not sig["get_attr"],
               f"lower's program of {model_text(recipe)} does not read "
               f"{', '.join(sig['unread'] + sig['get_attr'])} through its inputs: the values were copied into the "
               f"graph (a get_attr, or a constant packed into a program), so loading new weights changes nothing. "
               f"Unlike kata 5's programs, compiled in the process that runs them, a saved program takes its weights "
               f"as inputs: pass each partition's parameter placeholders to run_program. README.md, 'Step 4: delegate'.")
        expect_outputs(recipe, seen["outputs_new_state"], state_seed=7,
                       what="lower's program with other weights loaded (module.load_state_dict)")


# --- Step 5: save, and load elsewhere ---------------------------------------------------------------------------

SAVED = ("mlp", "layer_norm_between", "scaled_by_buffer", "mixed_dtypes", "three_outputs")  # one island, 3 outputs
REPLAY_BATCHES = [1, 5, 8]


def start_fresh_process(folder: Path) -> subprocess.Popen:
    """A new Python that imports only torch and katas.common.npu.aot, then waits for its request on stdin: started
    before the programs are lowered and saved, so that its start-up overlaps that work. It unpickles what the
    attempt saved: while grading, checker.attempt.sandbox.confine_interpreters runs it in the attempt's sandbox."""
    root = str(Path(katas.__file__).resolve().parent.parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FX_KATAS")}
    env.update(PYTHONPATH=root, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.Popen([sys.executable, "-c", REPLAY_COMMAND], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=folder, env=env)


def replay_in(process: subprocess.Popen, folder: Path, recipes: tuple[str, ...]) -> dict:
    """Have the fresh process load each saved program and run it on REPLAY_BATCHES and once with other weights.
    recipe -> the replay's entry (see npu_aot.replay)."""
    request = {"programs": []}
    for recipe in recipes:
        cases = [{"inputs": dump_tensors((probes.example(recipe, b),)), "state": None} for b in REPLAY_BATCHES]
        cases.append({"inputs": dump_tensors((probes.example(recipe, 4),)),
                      "state": dump_tensors(probes.new_state(recipe, 11))})
        request["programs"].append({"path": str(folder / f"{recipe}.pt2"), "cases": cases})
    try:
        out, err = process.communicate(json.dumps(request), timeout=REPLAY_TIME_LIMIT)
    except subprocess.TimeoutExpired:
        process.kill()
        raise RuntimeError(f"the replay process took over {REPLAY_TIME_LIMIT} s") from None
    if process.returncode != 0 or not out.strip():
        raise RuntimeError(f"the replay process failed: {err.strip()[-800:]}")
    return dict(zip(recipes, json.loads(out)["programs"]))


def _why_save_refused(error: str | None) -> str:
    if error is None:
        return ""
    if "references nonexistent attribute" in error:
        return STALE_GRAPH.strip()
    if "missing val field" in error or "meta" in error and "val" in error:
        return ("A node of the graph has no meta[\"val\"]: every node you insert (run_program, and each getitem of "
                "its list) needs the fake value its op makes, computed under the inputs' fake mode. README.md, "
                "'Give new nodes meta[\"val\"]'.")
    return ("The graph signature names placeholders and outputs by node name: after rewriting the graph, name the "
            "new nodes there: every input spec and every output spec, position by position. README.md, 'The "
            "signature'.")


@CHECKS.check(stage="save_load", weight=3)
def saved_program_runs_in_a_fresh_process(ctx):
    "torch.export.save of lower's program, torch.export.load in a new process: runs any batch and new weights"
    with tempfile.TemporaryDirectory(prefix="fx-katas-aot-") as tmp:
        folder = Path(tmp)
        os.chmod(folder, 0o777)  # the worker may run as another user
        fresh = start_fresh_process(folder)
        try:
            for recipe in SAVED:
                seen = _lowered(ctx, recipe, save_to=str(folder / f"{recipe}.pt2"))
                expect(seen["saved"] is None,
                       f"torch.export.save refused lower's program of {model_text(recipe)}:\n  {seen['saved']}\n"
                       f"{_why_save_refused(seen['saved'])}")
            replayed = replay_in(fresh, folder, SAVED)
        finally:
            if fresh.poll() is None:
                fresh.kill()
                fresh.wait()
    for recipe, entry in replayed.items():
        expect(entry["error"] is None,
               f"torch.export.load of lower's program of {model_text(recipe)} failed in a fresh process that "
               f"imports only torch and katas.common.npu.aot:\n  {entry['error']}\nA saved program may call ATen ops "
               f"and npu_aot.run_program only: an op or a table your module registers exists only in the process "
               f"that made the program. README.md, 'Step 5'.")
        cases = entry["cases"]
        for batch, case in zip(REPLAY_BATCHES + ["4, other weights"], cases):
            expect("error" not in case,
                   f"the loaded program of {model_text(recipe)} failed on batch {batch} in a fresh process:\n"
                   f"  {case.get('error')}")
        got = {b: load_tensors(c["outputs"]) for b, c in zip(REPLAY_BATCHES, cases)}
        expect_outputs(recipe, got, what="the loaded program (in a fresh process)")
        expect_outputs(recipe, {4: load_tensors(cases[-1]["outputs"])}, state_seed=11,
                       what="the loaded program with other weights loaded (in a fresh process)")
        want = ZOO[recipe].launches * len(cases)
        expect(entry["launches"] == want,
               f"the loaded program of {model_text(recipe)} made {entry['launches']} NPU launch(es) in a fresh "
               f"process over {len(cases)} calls; it should make {want}: its NPU ops ran on the CPU.")


# --- fuzz ------------------------------------------------------------------------------------------------------

def random_recipes():
    return mlp_specs(activations=NPU_FRIENDLY_ACTIVATIONS + CPU_ONLY_ACTIVATIONS, dtypes=("float32", "float64"),
                     batch_shapes=((2,),))


@CHECKS.check(stage="fuzz", weight=3)
def random_mlps_lower_and_match_eager(ctx):
    "random MLPs (CPU ops mid-graph, reused outputs, float64): lowered, every NPU op delegated, eager's outputs"
    def prop(spec) -> None:
        seen = _lowered(ctx, spec)
        expect_outputs(spec, seen["outputs"], what="ep.module() of lower's program")
        expect_delegated(spec, seen, None)

    fuzz(ctx, random_recipes(), prop, describe=lambda spec: describe(spec) + f"\n  batch sizes {BATCHES}",
         max_examples=max(4, ctx.max_examples // 3))


def program_plans():
    """aot_program_plans(), each with a float32 op that reads a tensor of another dtype (probes.MIXED_DTYPES), a
    reshape of each input's own batch (probes.VIEW_KINDS: the batch bare, multiplied into a size, split out again;
    one per input, whichever it is) whose result is an output, and a slice of the batch or of a static dimension."""
    from hypothesis import strategies as st

    views = st.lists(st.sampled_from(probes.VIEW_KINDS), min_size=3, max_size=3)
    return st.tuples(aot_program_plans(), st.sampled_from(probes.MIXED_DTYPES), views,
                     st.sampled_from(probes.SLICES)).map(
        lambda drawn: {**drawn[0], "mixed": drawn[1], "views": tuple(drawn[2][:drawn[0]["inputs"]]),
                       "slice": drawn[3]})


@CHECKS.check(stage="fuzz", weight=3)
def random_programs_lower_and_match_eager(ctx):
    "random programs (1-3 inputs, islands of 1-3 outputs, batch anywhere, casts, view.dtype, layouts, mixed dtypes), each saved"
    def prop(plan) -> None:
        # saved (to memory): torch.export.save checks every output spec against the graph, ep.module() does not
        seen = _lowered(ctx, plan, save_to=probes.SAVE_IN_MEMORY)
        expect_outputs(plan, seen["outputs"], what="ep.module() of lower's program")
        expect_delegated(plan, seen, None)
        expect(seen["saved"] is None,
               f"torch.export.save refused lower's program:\n  {seen['saved']}\n{_why_save_refused(seen['saved'])}")

    fuzz(ctx, program_plans(), prop, describe=lambda plan: probes.describe_plan(plan) + f"\n  batch sizes {BATCHES}",
         max_examples=max(3, ctx.max_examples // 4))
