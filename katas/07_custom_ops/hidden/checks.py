"""Hidden checks for kata 7 (the vendor kernel's op: custom_op, fake kernels, autograd, pattern rewriting, fusion
that survives training). Learners: solve the kata from README.md, not from here.

The attempt's ops live in the worker, so probes.py calls them there and returns data. Every right answer is
computed here, in the checks' process, from the same recipes: eager `F.gelu(F.linear(...))` and its autograd for
the ops, the eager model and its gradients for the rewrite and the training backend. Structure is checked beside
every number, since a pass that fuses nothing is numerically perfect: fused nodes counted in the rewritten graph,
and the operators that really ran in the compiled forward and backward, recorded by a dispatch mode.
Nothing is compared with the reference.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import torch
import torch.nn.functional as F
from hypothesis import strategies as st

from checker.child import load_module
from checker.kit import CheckFailed, Checks, expect, fuzz
from katas.common import describe
from katas.common.models import LayerSpec, MLPSpec
from katas.common.strategies import linear_gelu_calls, mlp_specs

_HIDDEN = Path(__file__).parent
probes = load_module(_HIDDEN / "probes.py", "kata07_custom_ops_probes")
OpCase = probes.OpCase

CHECKS = Checks()

GELU_ACTIVATIONS = ("gelu", "gelu_tanh")
# A backward written out by hand sums in another order than autograd's: float32 gradients may differ in the last bits.
GRAD_TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}


def eager_linear_gelu(case: OpCase) -> dict:
    """The right answers for one op case: output and gradients of the same loss, by eager autograd."""
    x, weight, bias = case.tensors(requires_grad=True)
    out = F.gelu(F.linear(x, weight, bias), approximate=case.approximate)
    (out * probes._grad_weights(out)).sum().backward()
    return {"out": out.detach(), "x": x.grad, "weight": weight.grad, "bias": None if bias is None else bias.grad}


def describe_call(raw: dict) -> str:
    """A fuzzed op call as the learner reads it in a counterexample."""
    return "  " + OpCase(**raw).describe()


def _first_line(text: str, limit: int = 300) -> str:
    line = next((ln for ln in str(text).strip().splitlines() if ln.strip()), "")
    return line[:limit]


def _custom_op_or_fail(ctx, name: str) -> dict:
    """The schema of the attempt's op `name`, or a failure saying it is not a custom op."""
    try:
        return ctx.probe(probes.schema, name)
    except Exception as exc:  # noqa: BLE001 - NotACustomOp crosses the boundary as a remote error
        if "NotACustomOp" in (getattr(exc, "remote_type", "") or type(exc).__name__):
            raise CheckFailed(f"{_first_line(exc)}. README.md, 'Step 1: the op'.") from None
        raise


def _opcheck_failures(results: list[dict], cases: list[dict]) -> list[str]:
    failed = []
    for raw, report in zip(cases, results):
        for test, outcome in report.items():
            if outcome != "SUCCESS":
                failed.append(f"  {test} on {OpCase(**raw).describe()}:\n    {_first_line(outcome, 400)}")
    return failed


OPCHECK_HELP = {
    "test_schema": "the schema does not say what the kernel does: an argument it writes must be in mutates_args",
    "test_faketensor": "the fake kernel and the real one disagree on the output's shape, dtype or device",
    "test_autograd_registration": "autograd is registered wrongly: use register_autograd (README.md, 'Step 3')",
    "test_aot_dispatch_dynamic": "the op fails under aot_autograd with symbolic sizes: its fake kernel or "
                                 "backward does something only real tensors allow",
}


def expect_opcheck(ctx, name: str, cases: list[dict]) -> None:
    _custom_op_or_fail(ctx, name)
    failures = _opcheck_failures(ctx.probe(probes.run_opcheck, name, cases), cases)
    if failures:
        tests = sorted({line.split()[0] for line in failures if line.startswith("  test_")})
        help_lines = "\n".join(f"- {t}: {OPCHECK_HELP.get(t, '')}" for t in tests)
        raise CheckFailed(f"torch.library.opcheck({name}, ...) failed:\n" + "\n".join(failures[:4])
                          + f"\n{help_lines}")


# --- Step 1: the op ---------------------------------------------------------------------------------------

FORWARD_SCHEMA = "(Tensor x, Tensor weight, Tensor? bias, str approximate=\"none\") -> Tensor"


def _argument_kinds(info: dict) -> list[tuple[str, Any, bool]]:
    return [(a["type"], a["default"], a["written"]) for a in info["arguments"]]


@CHECKS.check(stage="op", weight=1)
def forward_op_has_the_contract_schema(ctx):
    "linear_gelu is a custom op with the schema (Tensor, Tensor, Tensor?, str='none') -> Tensor, mutating nothing"
    info = _custom_op_or_fail(ctx, "linear_gelu")
    want = [("Tensor", "<none>", False), ("Tensor", "<none>", False), ("Optional[Tensor]", "<none>", False),
            ("str", "none", False)]
    expect(_argument_kinds(info) == want and info["returns"] == ["Tensor"],
           f"linear_gelu's schema is\n  {info['text']}\nThe contract is {FORWARD_SCHEMA}: x, weight, an optional bias "
           "(type it Optional[torch.Tensor]), approximate as a str defaulting to \"none\", one Tensor returned, "
           "mutates_args=(). custom_op reads the schema from the type hints. README.md, 'Step 1: the op'.")


@CHECKS.check(stage="op", weight=2)
def forward_op_computes_linear_gelu(ctx):
    "linear_gelu(x, w, b, approximate) equals F.gelu(F.linear(x, w, b), approximate) on random shapes and dtypes"
    def prop(raw: dict) -> None:
        case = OpCase(**raw)
        got = ctx.probe(probes.forward, raw)
        want = eager_linear_gelu(case)["out"]
        expect(isinstance(got, torch.Tensor), f"linear_gelu returned {type(got).__name__}, not a Tensor")
        torch.testing.assert_close(got, want, msg=lambda m: f"linear_gelu on {case.describe()} differs from "
                                                          f"F.gelu(F.linear(x, w, b), approximate=...):\n{m}")

    fuzz(ctx, linear_gelu_calls(), prop, describe=describe_call)


OPCHECK_CASES = [
    {},
    {"lead": (2, 3), "bias": False, "approximate": "tanh"},
    {"lead": (), "in_features": 3, "out_features": 5, "dtype": "float64"},
    {"lead": (3,), "x_requires_grad": False},
]


@CHECKS.check(stage="op", weight=2)
def opcheck_passes_on_forward_op(ctx):
    "torch.library.opcheck passes on linear_gelu (schema, fake kernel, autograd registration, aot_autograd)"
    expect_opcheck(ctx, "linear_gelu", OPCHECK_CASES)


# --- Step 2: the fake kernel ------------------------------------------------------------------------------

@CHECKS.check(stage="fake", weight=2)
def fake_kernel_matches_real_kernel(ctx):
    "under FakeTensorMode, linear_gelu's output has the real output's shape, dtype and device (random shapes)"
    def prop(raw: dict) -> None:
        case = OpCase(**raw)
        seen = ctx.probe(probes.fake_and_real, raw)
        expect(seen["fake"] == seen["real"],
               f"on {case.describe()} the fake kernel says {seen['fake']} but the real kernel returns "
               f"{seen['real']}. The fake kernel must describe exactly what the real one returns: "
               "README.md, 'Step 2: the fake kernel'.")

    fuzz(ctx, linear_gelu_calls(), prop, describe=describe_call)


@CHECKS.check(stage="fake", weight=1)
def fake_kernel_keeps_sizes_symbolic(ctx):
    "torch.export with a Dim on every batch dimension: the fake kernel keeps them symbolic"
    for raw in ({"lead": (2, 3)}, {"lead": (4,), "bias": False}):
        case = OpCase(**raw)
        seen = ctx.probe(probes.export_with_dynamic_batch, raw)
        expect("error" not in seen,
               f"torch.export of a module calling linear_gelu with x {(*case.lead, case.in_features)}, every batch "
               f"dimension a Dim, failed:\n  {seen.get('error')}\nA fake kernel that turns a size into a Python int "
               "(int(), a shape compared with a number, torch.empty(int(...))) fixes it to the example's value. "
               "Build the output from the inputs' sizes as they are: README.md, 'Step 2: the fake kernel'.")
        symbolic = seen["sizes"][:-1]
        expect(all(not s.isdigit() for s in symbolic) and seen["sizes"][-1] == str(case.out_features),
               f"torch.export recorded linear_gelu's output sizes as {seen['sizes']} for x "
               f"{(*case.lead, case.in_features)} with symbolic batch dimensions: the batch dimensions should stay "
               "symbolic and the last be out_features.")


# --- Step 3: autograd -------------------------------------------------------------------------------------

def compare_gradients(case: OpCase, seen: dict) -> None:
    want = eager_linear_gelu(case)
    torch.testing.assert_close(seen["out"], want["out"])
    for name in ("x", "weight", "bias"):
        if want[name] is None:
            expect(seen[name] is None, f"on {case.describe()} the {name} received a gradient, but eager gives none")
            continue
        expect(seen[name] is not None, f"on {case.describe()} the {name} received no gradient; eager gives one. "
                                       "The backward returns one gradient per input of the forward op.")
        torch.testing.assert_close(
            seen[name], want[name], **GRAD_TOLERANCE,
            msg=lambda m, name=name: f"the gradient of {name} differs from eager autograd on {case.describe()}:\n{m}")


@CHECKS.check(stage="autograd", weight=3)
def gradients_match_eager(ctx):
    "gradients through linear_gelu (x, weight, bias) equal eager autograd's on random shapes, both GELUs"
    def prop(raw: dict) -> None:
        compare_gradients(OpCase(**raw), ctx.probe(probes.gradients, raw))

    fuzz(ctx, linear_gelu_calls(), prop, describe=describe_call)


@CHECKS.check(stage="autograd", weight=2)
def backward_runs_the_backward_op(ctx):
    "the backward of linear_gelu runs linear_gelu_backward, once per call"
    backward_name = ctx.probe(probes.op_name, "linear_gelu_backward")
    for raw in ({}, {"lead": (2, 3), "bias": False, "approximate": "tanh"}):
        seen = ctx.probe(probes.gradients, raw)
        ran = seen["backward_ops"]
        calls = ran.get(backward_name, 0)
        shown = ", ".join(f"{k} x{v}" for k, v in sorted(ran.items())) or "nothing"
        expect(calls == 1,
               f"backward through one linear_gelu call ({OpCase(**raw).describe()}) ran {backward_name} {calls} "
               f"time(s); the operators it ran: {shown}. The vendor's backward kernel is the op "
               "linear_gelu_backward: register_autograd's backward calls it once. README.md, 'Step 3: autograd'.")


@CHECKS.check(stage="autograd", weight=1)
def opcheck_passes_on_backward_op(ctx):
    "torch.library.opcheck passes on linear_gelu_backward"
    expect_opcheck(ctx, "linear_gelu_backward", OPCHECK_CASES[:3])


# --- Step 4: the out= variant -----------------------------------------------------------------------------

@CHECKS.check(stage="out_variant", weight=2)
def out_variant_declares_what_it_writes(ctx):
    "linear_gelu_out declares `out` (and nothing else) as mutated, returns nothing, and passes opcheck"
    info = _custom_op_or_fail(ctx, "linear_gelu_out")
    kinds = _argument_kinds(info)
    want = [("Tensor", "<none>", False), ("Tensor", "<none>", False), ("Optional[Tensor]", "<none>", False),
            ("Tensor", "<none>", True), ("str", "none", False)]
    expect(kinds == want and info["returns"] == [],
           f"linear_gelu_out's schema is\n  {info['text']}\nThe contract is (Tensor x, Tensor weight, Tensor? bias, "
           "Tensor(a!) out, str approximate=\"none\") -> (): the `(a!)` on out is what mutates_args=(\"out\",) "
           "writes, and the op returns None. README.md, 'Step 4: an out= variant'.")
    expect_opcheck(ctx, "linear_gelu_out", OPCHECK_CASES[:2])


@CHECKS.check(stage="out_variant", weight=2)
def out_variant_writes_the_answer(ctx):
    "linear_gelu_out writes linear_gelu's answer into `out`, eagerly and inside torch.compile"
    for raw in ({}, {"lead": (2, 3), "bias": False, "approximate": "tanh", "dtype": "float64"}):
        case = OpCase(**raw)
        seen = ctx.probe(probes.out_variant, raw)
        want = eager_linear_gelu(case)["out"]
        expect(seen["returned"] == "None", f"linear_gelu_out returned {seen['returned']}; an out= op returns None.")
        torch.testing.assert_close(seen["out"], want, msg=lambda m: f"after linear_gelu_out({case.describe()}), "
                                                                   f"`out` does not hold the answer:\n{m}")
        compiled = seen["compiled"]
        expect(isinstance(compiled, torch.Tensor),
               f"torch.compile(backend='aot_eager', fullgraph=True) of a function calling linear_gelu_out failed:\n"
               f"  {compiled}")
        torch.testing.assert_close(
            compiled, want, msg=lambda m: (
                "inside torch.compile(backend='aot_eager'), the buffer passed to linear_gelu_out does not hold the "
                f"answer afterwards ({case.describe()}). A compiler believes the schema: if it does not say `out` is "
                f"written, the call has no effect it must keep, and it may drop it.\n{m}"))


# --- Step 5: the rewrite ----------------------------------------------------------------------------------

def compare_runs(seen: dict, want: dict, what: str) -> None:
    """Outputs and every gradient (parameters by name, and the input) of a run against the eager run."""
    expect(len(seen["outputs"]) == len(want["outputs"]),
           f"{what}: {len(seen['outputs'])} output(s), eager returns {len(want['outputs'])}")
    for i, (got, ref) in enumerate(zip(seen["outputs"], want["outputs"])):
        torch.testing.assert_close(got, ref, msg=lambda m, i=i: f"{what}: output {i} differs from eager:\n{m}")
    for name, ref in want["grads"].items():
        got = seen["grads"].get(name)
        if ref is None:
            expect(got is None, f"{what}: {name} received a gradient, but in eager it gets none (it is used only "
                                "under torch.no_grad()). README.md, 'Where the rewriter puts the new node'.")
            continue
        expect(got is not None, f"{what}: {name} received no gradient, but in eager it gets one.")
        torch.testing.assert_close(got, ref, **GRAD_TOLERANCE,
                                   msg=lambda m, name=name: f"{what}: the gradient of {name} differs from eager:\n{m}")


def safe_pairs(spec: MLPSpec) -> int:
    """Linear -> GELU pairs of a random MLP whose Linear output the GELU alone reads (kata 3's count)."""
    return sum(1 for layer in spec.layers if layer.activation in GELU_ACTIVATIONS and layer.reuse == "none")


def run_rewrite(ctx, recipe: Any, what: str, *, fused: range) -> dict:
    """Rewrite the recipe's Dynamo graph with the attempt, check counts, numbers and gradients, return what was seen.

    `fused` is the range of fused-node counts the lesson allows; each fused pair replaces one linear and one gelu
    node."""
    seen = ctx.probe(probes.rewrite, recipe)
    before, after = seen["before"], seen["after"]
    n_fused = after.get("fused", 0) - before.get("fused", 0)
    code = "\n".join("    " + line for line in seen["code"].strip().splitlines()[-12:])
    expect(n_fused in fused,
           f"{what}: fuse_with_rewriter left {n_fused} fused node(s) in the graph; "
           + (f"expected {fused.start}" if len(fused) == 1 else f"expected {fused.start} to {fused.stop - 1}")
           + f". The graph afterwards ends:\n{code}")
    expect(seen["fused_calls"] == n_fused,
           f"{what}: the graph has {n_fused} fused node(s), but running it called the fused op {seen['fused_calls']} "
           "time(s). A GraphModule runs the Python code generated from its graph: after editing the graph, "
           "gm.recompile() regenerates it.")
    expect(seen["returned"] == n_fused,
           f"{what}: fuse_with_rewriter returned {seen['returned']!r} but the graph has {n_fused} new fused node(s); "
           "return the number of pairs fused.")
    expect(after.get("linear", 0) == before.get("linear", 0) - n_fused
           and after.get("gelu", 0) == before.get("gelu", 0) - n_fused,
           f"{what}: the graph had {before.get('linear', 0)} linear and {before.get('gelu', 0)} gelu node(s); after "
           f"{n_fused} fusion(s) it has {after.get('linear', 0)} and {after.get('gelu', 0)}. Each fused pair replaces "
           f"exactly one Linear and one GELU.\n{code}")
    compare_runs(seen, probes.eager_run(recipe), what)
    expect(seen["again"] == 0, f"{what}: a second fuse_with_rewriter on the rewritten graph returned "
                               f"{seen['again']!r}; there is nothing left to fuse, so it returns 0.")
    return seen


@CHECKS.check(stage="rewrite", weight=2)
def rewriter_fuses_every_form_dynamo_writes(ctx):
    "fuse_with_rewriter fuses a Linear -> GELU pair as Dynamo writes it: F.gelu, nn.GELU, tanh, no bias, GELU reused"
    for recipe in [r for r in probes.RECIPES if r.startswith("pair ")]:
        run_rewrite(ctx, recipe, f"Dynamo graph of Linear -> {recipe[5:]} -> Linear", fused=range(1, 2))


@CHECKS.check(stage="rewrite", weight=2)
def rewriter_leaves_shared_linear_outputs(ctx):
    "a pair whose Linear output has another reader (residual, returned, read before the GELU) is left alone"
    for recipe in [r for r in probes.RECIPES if r.startswith("shared ")]:
        run_rewrite(ctx, recipe, f"Dynamo graph where z = fc(x) is also {recipe[7:].replace('_', ' ')}",
                    fused=range(0, 1))


@CHECKS.check(stage="rewrite", weight=3)
def rewriter_respects_no_grad_blocks(ctx):
    "beside a `with torch.no_grad():` block: pairs the grad mode does not split are fused; gradients stay eager's"
    block = "`with torch.no_grad():`"
    for recipe, text, fused in (
            ("grad frozen_pair", f"Linear and GELU inside {block}, their reader after it", range(0, 2)),
            ("grad frozen_linear", f"the Linear inside {block}, the GELU after it", range(0, 2)),
            ("grad frozen_head", f"the pair before {block}, its reader inside it", range(0, 2)),
            ("grad frozen_block", f"the pair and its reader inside {block}", range(1, 2)),
            ("grad unrelated_block", f"{block} computing a scale before the pair", range(1, 2))):
        run_rewrite(ctx, recipe, f"Dynamo graph of a training step, {text}", fused=fused)


def describe_rewrite_example(spec: MLPSpec) -> str:
    return describe(spec) + f"\n  ({safe_pairs(spec)} pair(s) safe to fuse)"


def mlps(max_layers: int = 3):
    return mlp_specs(activations=("gelu", "gelu_tanh", "gelu", "relu", "none"), max_layers=max_layers,
                     batch_shapes=((2,), (2, 3), (3,)), styles=("modules", "functional"))


@CHECKS.check(stage="rewrite", weight=3)
def rewriter_fuses_exactly_the_safe_pairs(ctx):
    "on random MLPs, fuse_with_rewriter fuses exactly the safe pairs, and the graph's values and gradients stay eager's"
    def prop(spec: MLPSpec) -> None:
        pairs = safe_pairs(spec)
        run_rewrite(ctx, spec, "the Dynamo graph of this MLP", fused=range(pairs, pairs + 1))

    fuzz(ctx, mlps(), prop, describe=describe_rewrite_example)


# --- Step 6: training -------------------------------------------------------------------------------------

def run_training(ctx, recipe: Any, batches: list[list[int]], what: str, *, fused: range,
                 all_need_grad: bool = True) -> dict:
    """Train one step per batch shape through the attempt's backend; check the fused calls forward and backward
    (`all_need_grad`: every fused call's output needs a gradient, so each has a backward call) and every number."""
    seen = ctx.probe(probes.train, recipe, batches)
    forward, backward = seen["forward"], seen["backward"]
    expect(forward["fused"] in fused,
           f"{what}: a training step compiled with npu_training_backend ran linear_gelu {forward['fused']} time(s) "
           f"in the forward pass (and aten.gelu {forward['aten.gelu']} time(s)); expected "
           + (f"{fused.start}" if len(fused) == 1 else f"{fused.start} to {fused.stop - 1}")
           + ". Fuse on Dynamo's graph, before aot_autograd splits it: after the split, the forward graph also "
             "returns the pre-GELU value for the backward, and no pair is safe. README.md, 'Step 6: training'.")
    expect(not all_need_grad or backward["fused_backward"] == forward["fused"],
           f"{what}: the forward pass ran linear_gelu {forward['fused']} time(s), the backward pass ran "
           f"linear_gelu_backward {backward['fused_backward']} time(s); each fused call needs its fused backward.")
    for run in seen["runs"]:
        shape = tuple(run["input"].shape)
        compare_runs(run, probes.eager_run(recipe, run["input"]), f"{what}, input of shape {shape}")
    return seen


@CHECKS.check(stage="training", weight=3)
def training_runs_fused_forward_and_backward(ctx):
    "a training step through npu_training_backend runs linear_gelu forward and linear_gelu_backward backward"
    spec = MLPSpec(in_features=4, layers=(LayerSpec(6, True, "gelu"), LayerSpec(5, False, "gelu_tanh"),
                                          LayerSpec(3, True, "gelu", "residual")), batch_shape=(2, 3), seed=5)
    run_training(ctx, spec, [[2, 3]], "a 3-layer MLP with 2 safe pairs and 1 residual", fused=range(2, 3))
    run_training(ctx, "pair F.gelu(z)", [[2, 3]], "Linear -> F.gelu -> Linear", fused=range(1, 2))


@CHECKS.check(stage="training", weight=3)
def training_matches_eager(ctx):
    "on random MLPs, training through npu_training_backend fuses the safe pairs; values and gradients equal eager's"
    def prop(spec: MLPSpec) -> None:
        pairs = safe_pairs(spec)
        run_training(ctx, spec, [list(spec.batch_shape)], "this MLP", fused=range(pairs, pairs + 1))

    fuzz(ctx, mlps(max_layers=2), prop, describe=describe_rewrite_example, max_examples=6 if not ctx.deep else 10)


@CHECKS.check(stage="training", weight=1)
def training_handles_a_new_batch_size(ctx):
    "npu_training_backend stays right when the batch size changes (Dynamo compiles again)"
    spec = MLPSpec(in_features=3, layers=(LayerSpec(4, True, "gelu"), LayerSpec(2, True, "gelu_tanh")),
                   batch_shape=(2,), seed=11)
    run_training(ctx, spec, [[2], [5], [7]], "a 2-layer MLP called with batch 2, then 5, then 7", fused=range(2, 3))


@CHECKS.check(stage="training", weight=2)
def training_respects_no_grad_blocks(ctx):
    "training through npu_training_backend beside a `with torch.no_grad():` block keeps eager's gradients"
    for recipe in ("grad frozen_pair", "grad frozen_linear"):
        run_training(ctx, recipe, [[2, 3]], f"a training step of the model '{recipe[5:]}'", fused=range(0, 2),
                     all_need_grad=False)
