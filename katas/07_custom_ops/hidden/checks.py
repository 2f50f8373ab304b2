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
from typing import Any

import torch
import torch.nn.functional as F
from hypothesis import strategies as st

from checker.kit import load_module
from checker.kit import CheckFailed, Checks, expect, fuzz
from katas.common import describe
from katas.common.models import LayerSpec, MLPSpec
from katas.common.strategies import (GRAD_LAYOUT_ENTRY_OFF, IN_PLACE_WRITES, LINEAR_GELU_DEVICES, NOT_PAIR_INPUT_WRITES, OUT_BUFFER_LAYOUTS,
                                     PAIR_INPUT_WRITES, grad_mode_block_layouts, grad_mode_layouts,
                                     linear_gelu_call_pairs, linear_gelu_call_pairs_sharing_input,
                                     linear_gelu_call_pairs_sharing_weight, linear_gelu_calls_any_dtype,
                                     linear_gelu_calls_any_layout, mlp_specs, trained_grad_mode_layouts)

_HIDDEN = Path(__file__).parent
probes = load_module(_HIDDEN / "probes.py", "kata07_custom_ops_probes")
OpCase = probes.OpCase

CHECKS = Checks()

GELU_ACTIVATIONS = ("gelu", "gelu_tanh")
# A backward written out by hand sums in another order than autograd's: float32 gradients may differ in the last bits.
GRAD_TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}
# ... and in half precision by a few of their (8 or 11 bit) mantissa's last bits. In float64, a kernel that computes
# in float32 (a "float32 detour") is off by about 1e-8: far above float64's own rounding.
GRAD_TOLERANCE_BY_DTYPE = {"float16": {"rtol": 4e-3, "atol": 4e-3}, "bfloat16": {"rtol": 3e-2, "atol": 3e-2},
                           "float64": {"rtol": 1e-10, "atol": 1e-10}}
FORWARD_TOLERANCE_BY_DTYPE = {"float64": {"rtol": 1e-10, "atol": 1e-10}}  # others: assert_close's defaults


def expect_forward_close(case: "OpCase", got: torch.Tensor, want: torch.Tensor, msg) -> None:
    """linear_gelu's output against eager's. In float16 and bfloat16 a kernel that computes in x's dtype in its
    own order (matmul, then + bias: two roundings where F.linear has one) differs where z = x @ w.T + b cancels:
    each element may be off by a few units of x's dtype at the size of the terms it sums, |x| @ |w|.T + |b|, on
    top of assert_close's defaults. (A float32 detour is caught apart: expect_no_float32_detour.)"""
    if case.dtype not in HALF_DTYPES or got.dtype != want.dtype or got.shape != want.shape:
        torch.testing.assert_close(got, want, **FORWARD_TOLERANCE_BY_DTYPE.get(case.dtype, {}), msg=msg)
        return
    x, weight, bias = (None if t is None else t.double() for t in case.tensors())
    terms = x.abs() @ weight.abs().T + (0 if bias is None else bias.abs())
    slack = 4 * torch.finfo(getattr(torch, case.dtype)).eps * terms
    diff = (got.double() - want.double()).abs()
    bad = diff > slack + 1.6e-2 * want.double().abs() + 1e-5
    if bool(bad.any()):
        where = tuple(int(i) for i in bad.nonzero()[0])
        raise CheckFailed(msg(f"{int(bad.sum())} of {bad.numel()} element(s) differ by more than rounding in "
                              f"{case.dtype} allows (4 units of its last place at the size of |x| @ |w|.T + |b|): "
                              f"at {where}, {float(got[where])} where eager gives {float(want[where])}"))


def grad_tolerance(dtype: str) -> dict:
    return GRAD_TOLERANCE_BY_DTYPE.get(dtype, GRAD_TOLERANCE)


def eager_linear_gelu(case: OpCase) -> dict:
    """The right answers for one op case: output and gradients of the same loss, by eager autograd."""
    x, weight, bias = case.tensors(requires_grad=True)
    out = F.gelu(F.linear(x, weight, bias), approximate=case.approximate)
    (out * probes._grad_weights(out)).sum().backward()
    return {"out": out.detach(), "x": x.grad, "weight": weight.grad, "bias": None if bias is None else bias.grad}


HALF_DTYPES = ("float16", "bfloat16")


def float32_detour(case: OpCase) -> dict:
    """What a float32 detour gives: the same output and gradients computed in float32, then cast to x's dtype."""
    x, weight, bias = (None if t is None else t.float().requires_grad_() for t in case.tensors())
    out = F.gelu(F.linear(x, weight, bias), approximate=case.approximate)
    half = getattr(torch, case.dtype)
    (out * probes._grad_weights(out.to(half)).float()).sum().backward()
    return {name: None if t is None else t.to(half) for name, t in
            (("out", out.detach()), ("x", x.grad), ("weight", weight.grad), ("bias", None if bias is None else bias.grad))}


def expect_no_float32_detour(case: OpCase, got: torch.Tensor, want: torch.Tensor, detour: torch.Tensor,
                             what: str) -> None:
    """In half precision, where eager (in x's dtype) and a float32 detour round differently, `got` may not side
    with the detour in most of those elements: a kernel that computes in float32 and casts back does. (A kernel
    that computes in x's dtype in another order, e.g. its own GELU derivative, rounds its own way: it may match
    neither, and passes.)"""
    if case.dtype not in HALF_DTYPES or detour is None:
        return
    split = want != detour
    total = int(split.sum())
    if total < 4:  # too few to tell a detour from a kernel that rounds its own way
        return
    with_eager, with_detour = int((got == want)[split].sum()), int((got == detour)[split].sum())
    expect(2 * with_detour <= total or with_detour <= with_eager,
           f"{what} on {case.describe()}: in the {total} element(s) where computing in {case.dtype} and computing in "
           f"float32 then casting back round differently, yours equals the float32 computation cast back in "
           f"{with_detour} and the {case.dtype} computation in {with_eager}. The op and its backward compute in x's own dtype, no float32 detour: call "
           "F.linear / aten.gelu_backward / mm on the half-precision tensors themselves, without .float() or "
           "dtype=torch.float32 (README.md, 'Step 1: the op').")


# blind round 4: half-precision calls large enough that computing in float32 and casting back rounds differently
# from eager in hundreds of elements (measured: about a quarter of the outputs, of grad_x and of grad_weight), tried
# before the random calls, whose small shapes may show too few such elements to tell (expect_no_float32_detour)
HALF_DTYPE_CASES = (
    {"lead": (64,), "in_features": 32, "out_features": 16, "dtype": "bfloat16", "seed": 3},
    {"lead": (4, 16), "in_features": 32, "out_features": 16, "dtype": "float16", "approximate": "tanh",
     "bias": False, "seed": 4},
    {"lead": (8, 8), "in_features": 24, "out_features": 16, "dtype": "bfloat16", "approximate": "tanh", "seed": 5,
     "x_layout": "transposed"},
    {"lead": (48,), "in_features": 32, "out_features": 24, "dtype": "float16", "seed": 6},
)


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
        expect(got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape),
               f"linear_gelu on {case.describe()} returned {got.dtype} of shape {tuple(got.shape)}; "
               f"F.gelu(F.linear(x, w, b)) gives {want.dtype} of shape {tuple(want.shape)}: same dtype, any "
               "number of leading dimensions. README.md, 'Step 1: the op'.")
        expect_forward_close(case, got, want, msg=lambda m: (
            f"linear_gelu's output on {case.describe()} differs from F.gelu(F.linear(x, w, b), approximate=...) "
            f"computed in {case.dtype}:\n{m}\nThe kernel computes in x's dtype (README.md, 'Step 1: the op')."))
        expect_no_float32_detour(case, got, want, float32_detour(case)["out"] if case.dtype in HALF_DTYPES else None,
                                 "linear_gelu's output")

    for raw in HALF_DTYPE_CASES:
        prop(raw)
    fuzz(ctx, linear_gelu_calls_any_layout(), prop, describe=describe_call)


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

def expected_outputs(case: OpCase, device: str) -> dict[str, list[dict]]:
    """What each op returns for `case` on `device`: shape, dtype and device of every output."""
    dtype = f"torch.{case.dtype}"
    lead = list(case.lead)
    out = {"shape": lead + [case.out_features], "dtype": dtype, "device": device}
    return {"linear_gelu": [out], "linear_gelu_backward": [
        {"shape": lead + [case.in_features], "dtype": dtype, "device": device},
        {"shape": [case.out_features, case.in_features], "dtype": dtype, "device": device},
        {"shape": [case.out_features], "dtype": dtype, "device": device}]}


OUTPUT_NAMES = {"linear_gelu": ("the output",), "linear_gelu_backward": ("grad_x", "grad_weight", "grad_bias")}


@CHECKS.check(stage="fake", weight=2)
def fake_kernel_matches_real_kernel(ctx):
    "the fake kernels of both ops give the real outputs' shape, dtype and device (fake CPU and meta tensors, any dtype)"
    def prop(raw: dict) -> None:
        case = OpCase(**raw)
        seen = ctx.probe(probes.fake_and_real, raw, LINEAR_GELU_DEVICES)
        for op, runs in seen.items():
            for run, device, how in (("real", "cpu", "the real kernel"), ("fake", "cpu", "under FakeTensorMode"),
                                     ("meta", "meta", "on meta tensors (device 'meta')")):
                want = expected_outputs(case, device)[op]
                got = runs[run]
                for i, name in enumerate(OUTPUT_NAMES[op]):
                    have = got[i] if i < len(got) else "nothing"
                    if have == want[i]:
                        continue
                    wrong = [k for k in ("shape", "dtype", "device") if i < len(got) and got[i][k] != want[i][k]]
                    expect(False,
                           f"{op} on {case.describe()}, {how}: {name} is {have}, but it should be {want[i]}"
                           + (f" ({' and '.join(wrong)} wrong)" if wrong else "") + ". "
                           + ("The real kernel must return what F.gelu(F.linear(...)) and its gradients have. "
                              if run == "real" else
                              "A fake kernel describes exactly what the real one returns, on the inputs' device: "
                              "build it from an input (x.new_empty, torch.empty_like, or dtype= and device= given), "
                              "never with a bare torch.empty/torch.zeros (float32, CPU). ")
                           + "README.md, 'Step 2: the fake kernel'.")

    fuzz(ctx, linear_gelu_calls_any_dtype(), prop, describe=describe_call)


@CHECKS.check(stage="fake", weight=1)
def fake_kernel_keeps_sizes_symbolic(ctx):
    "torch.export with a Dim on every batch dimension: the fake kernels of both ops keep them symbolic"
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
    case = OpCase(lead=(2, 3), bias=True)
    seen = ctx.probe(probes.export_backward_with_dynamic_batch, {"lead": (2, 3)})
    expect("error" not in seen,
           f"torch.export of a module calling linear_gelu_backward(grad, x, ...) with grad {(2, 3, case.out_features)} "
           f"and x {(2, 3, case.in_features)}, every batch dimension a Dim, failed:\n  {seen.get('error')}\nThe "
           "backward op's fake kernel turns a size into a Python int: aot_autograd traces it with symbolic sizes "
           "whenever a model trains with a dynamic batch. README.md, 'Step 2: the fake kernel'.")
    grad_x = seen["sizes"][0]
    expect(len(grad_x) == 3 and not any(s.isdigit() for s in grad_x[:2]),
           f"torch.export recorded linear_gelu_backward's grad_x sizes as {grad_x} for x (2, 3, "
           f"{case.in_features}) with symbolic batch dimensions: they should stay symbolic, as x's are.")


# --- Step 3: autograd -------------------------------------------------------------------------------------

def compare_gradients(case: OpCase, seen: dict, where: str = "") -> None:
    want = eager_linear_gelu(case)
    call = f"on {case.describe()}{where}"
    expect_forward_close(
        case, seen["out"], want["out"], msg=lambda m: (
            f"the forward output of linear_gelu {call} differs from F.gelu(F.linear(...)) before any gradient is "
            f"taken: a bug of the forward kernel, not of the backward (see the check 'linear_gelu(x, w, b, "
            f"approximate) equals ...'):\n{m}"))
    for name in ("x", "weight", "bias"):
        if want[name] is None:
            expect(seen[name] is None, f"{call} {name} received a gradient, but eager gives none: return None for "
                                       "a bias that was None (and for an input that needs no gradient).")
            continue
        expect(seen[name] is not None, f"{call} {name} received no gradient; eager gives one. "
                                       "The backward returns one gradient per input of the forward op.")
        expect_grad_close(
            case, name, seen[name], want[name],
            msg=lambda m, name=name: (f"the gradient of {name} differs from eager autograd {call} (the forward "
                                      f"output matches):\n{m}\nREADME.md, 'Step 3: autograd'."))
        if case.dtype in HALF_DTYPES:
            expect_no_float32_detour(case, seen[name], want[name], float32_detour(case)[name],
                                     f"the gradient of {name}{where}")


def grad_terms(case: OpCase) -> dict:
    """The size of what each gradient element sums, in float64: |gz| @ |w| for x, |gz|.T @ |x| over every leading
    row for the weight, |gz| summed for the bias (gz: the loss's gradient through the GELU)."""
    x, weight, bias = (None if t is None else t.double() for t in case.tensors())
    z = F.linear(x, weight, bias)
    out = F.gelu(z, approximate=case.approximate).to(getattr(torch, case.dtype))
    gz = torch.ops.aten.gelu_backward(probes._grad_weights(out).double(), z, approximate=case.approximate).abs()
    rows, xs = gz.reshape(-1, gz.shape[-1]), x.abs().reshape(-1, x.shape[-1])
    return {"x": gz @ weight.abs(), "weight": rows.T @ xs, "bias": rows.sum(0)}


def expect_grad_close(case: OpCase, name: str, got: torch.Tensor, want: torch.Tensor, msg) -> None:
    """A gradient against eager autograd's, at grad_tolerance. In float16 and bfloat16 a backward that computes in
    x's dtype in its own order (its own GELU derivative, mm over other rows) may also be off by a few units of the
    dtype's last place at the size of the terms the element sums (grad_terms): a large sum that cancels rounds
    far above its result. (A float32 detour is caught apart: expect_no_float32_detour.)"""
    tolerance = grad_tolerance(case.dtype)
    if case.dtype not in HALF_DTYPES or got.dtype != want.dtype or got.shape != want.shape:
        torch.testing.assert_close(got, want, **tolerance, msg=msg)
        return
    slack = 8 * torch.finfo(getattr(torch, case.dtype)).eps * grad_terms(case)[name]
    diff = (got.double() - want.double()).abs()
    bad = diff > slack + tolerance["rtol"] * want.double().abs() + tolerance["atol"]
    if bool(bad.any()):
        where = tuple(int(i) for i in bad.nonzero()[0])
        raise CheckFailed(msg(f"{int(bad.sum())} of {bad.numel()} element(s) differ by more than rounding in "
                              f"{case.dtype} allows (8 units of its last place at the size of the terms the element "
                              f"sums, plus rtol and atol {tolerance['rtol']}): at {where}, {float(got[where])} where "
                              f"eager gives {float(want[where])}"))


NOT_CONTIGUOUS_CASES = (  # tried before the random calls: x's leading dimensions transposed (README.md, 'Step 1')
    {"lead": (3, 2), "in_features": 4, "out_features": 5, "x_layout": "transposed"},
    {"lead": (2, 3, 2), "bias": False, "approximate": "tanh", "dtype": "float64", "x_layout": "transposed"},
)


@CHECKS.check(stage="autograd", weight=3)
def gradients_match_eager(ctx):
    "gradients through linear_gelu (x, weight, bias) equal eager autograd's on random shapes and dtypes, both GELUs"
    def prop(raw: dict) -> None:
        case = OpCase(**raw)
        try:
            seen = ctx.probe(probes.gradients, raw)
        except Exception as exc:  # noqa: BLE001 - a failure on a non-contiguous x is named as such
            name = getattr(exc, "remote_type", "") or type(exc).__name__
            if case.x_layout == "contiguous" or name == "NotImplementedError":
                raise
            line = getattr(exc, "attempt_line", None)
            raise CheckFailed(
                f"linear_gelu and its backward on {case.describe()}: your code raised {name}"
                + (f" at line {line}" if line else "") + f": {_first_line(exc)}\nx is not contiguous here, as a "
                "transposed activation is. F.gelu(F.linear(...)) accepts any strides, and so must the op and its "
                "backward: flatten the leading dimensions with reshape (view fails on these strides). README.md, "
                "'Step 1: the op'.") from None
        compare_gradients(case, seen)

    for raw in NOT_CONTIGUOUS_CASES + HALF_DTYPE_CASES:
        prop(raw)
    fuzz(ctx, linear_gelu_calls_any_layout(), prop, describe=describe_call)


SHARED_TEXT = {"weight": "ONE weight tensor (tied layers)", "x": "ONE input tensor x (two heads on one activation)"}


def _shared(pair: tuple) -> str | None:
    """What the two calls of a pair share: "weight", "x" or nothing (None)."""
    shared = pair[2] if len(pair) > 2 else None
    return "weight" if shared is True else shared or None


def describe_two_calls(pair: tuple) -> str:
    shared = _shared(pair)
    return (f"  first call: {OpCase(**pair[0]).describe()}\n  second call: {OpCase(**pair[1]).describe()}"
            + (f"\n  both calls share {SHARED_TEXT[shared]}: its gradient is the sum of both calls'"
               if shared else ""))


def _eager_op(x, weight, bias, approximate):
    return F.gelu(F.linear(x, weight, bias), approximate=approximate)


def compare_shared_calls(pair: tuple, seen: list) -> None:
    """Two calls sharing one weight or one x: outputs and gradients against the same two calls made with eager
    ops."""
    shared = _shared(pair)
    want = probes.gradients_of_two_calls(None, pair[0], pair[1], shared=shared, op=_eager_op)
    for i, (raw, got, ref) in enumerate(zip(pair, seen, want)):
        case, which = OpCase(**raw), ("first", "second")[i]
        call = (f"on the {which} of two calls sharing one {'weight' if shared == 'weight' else 'input x'}, made "
                f"before one backward ({case.describe()})")
        expect_forward_close(case, got["out"], ref["out"], msg=lambda m: (
            f"the forward output of linear_gelu {call} differs from F.gelu(F.linear(...)):\n{m}"))
        for name in ("x", "weight", "bias"):
            if ref[name] is None:
                expect(got[name] is None, f"{call} {name} received a gradient, but eager gives none.")
                continue
            expect(got[name] is not None, f"{call} {name} received no gradient; eager gives one.")
            torch.testing.assert_close(got[name], ref[name], **grad_tolerance(case.dtype), msg=lambda m, name=name: (
                f"the gradient of {name} differs from eager autograd {call}"
                + (f" ({name}'s gradient is the sum of both calls')" if name == shared else "") + f":\n{m}"))


SHARED_WEIGHT_PAIRS = (  # tried before the random pairs: one weight (or one x), two calls, other approximate and bias
    ({"lead": (2,), "in_features": 4, "out_features": 3, "bias": True, "approximate": "none"},
     {"lead": (3,), "in_features": 4, "out_features": 3, "bias": False, "approximate": "tanh", "seed": 1}, True),
    ({"lead": (2, 3), "in_features": 3, "out_features": 5, "bias": False, "approximate": "tanh"},
     {"lead": (2,), "in_features": 3, "out_features": 5, "bias": True, "approximate": "none", "seed": 2}, True),
    # blind round 6: state kept in a table keyed by x (its memory) loses the first call's entry
    ({"lead": (2,), "in_features": 4, "out_features": 3, "bias": True, "approximate": "none",
      "x_requires_grad": True},
     {"lead": (2,), "in_features": 4, "out_features": 5, "bias": False, "approximate": "tanh", "seed": 3,
      "x_requires_grad": True}, "x"),
)


@CHECKS.check(stage="autograd", weight=2)
def backward_keeps_each_calls_state(ctx):
    "two calls of linear_gelu before one backward, also sharing one weight or one x: each call's gradients are its own (approximate and bias kept on ctx)"
    def alone_is_wrong(raw: dict) -> str:
        """The failure of this call made alone, or "" if alone it is right."""
        try:
            compare_gradients(OpCase(**raw), ctx.probe(probes.gradients, raw), where=" (made alone)")
        except (CheckFailed, AssertionError) as exc:
            return str(exc)
        return ""

    def prop(pair: tuple) -> None:
        shared = _shared(pair)
        seen = ctx.probe(probes.gradients_of_two_calls, pair[0], pair[1], shared or False)
        try:
            if shared:
                compare_shared_calls(pair, seen)
            for i, (raw, got) in enumerate(zip(pair[:2], seen)):
                if not shared:
                    compare_gradients(OpCase(**raw), got, where=f" ({('first', 'second')[i]} of two calls made "
                                                                "before one backward)")
        except (CheckFailed, AssertionError) as exc:
            for raw in pair[:2]:
                lone = alone_is_wrong(raw)
                if lone:
                    raise CheckFailed(
                        f"{lone}\nThis call is wrong even when it is the only call before its backward, so two calls "
                        "fail too: this is not about state kept between calls. Fix the op or its backward for one "
                        "call first (README.md, 'Step 3: autograd').") from None
            raise CheckFailed(
                f"{exc}\nEach call alone gets the right gradients; together before one backward they do not. Each "
                "call's backward must use that call's own approximate and bias: keep them on ctx in setup_context, "
                "never in a global, an attribute of the op, or a table keyed by the weight, by x or by any input: "
                "two layers may share one weight, two heads may read one x, and the later call overwrites the "
                "entry. README.md, 'Step 3: autograd'.") from None

    for pair in SHARED_WEIGHT_PAIRS:
        prop(pair)
    pairs = st.one_of(linear_gelu_call_pairs().map(lambda pair: (*pair, False)),
                      linear_gelu_call_pairs_sharing_weight().map(lambda pair: (*pair, "weight")),
                      linear_gelu_call_pairs_sharing_input().map(lambda pair: (*pair, "x")))
    fuzz(ctx, pairs, prop, describe=describe_two_calls, max_examples=6 if not ctx.deep else 12)


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


OUT_VARIANT_CASES = (  # (op case, where `out` lives: katas.common.strategies.OUT_BUFFER_LAYOUTS)
    ({}, OUT_BUFFER_LAYOUTS[0]),
    ({"lead": (2, 3), "bias": False, "approximate": "tanh", "dtype": "float64"}, OUT_BUFFER_LAYOUTS[1]),
    ({"lead": (3,), "dtype": "bfloat16"}, OUT_BUFFER_LAYOUTS[2]),
    # blind round 4: `out` views that `reshape` can only copy (a kernel writing through out.reshape(...) writes
    # into that copy): a middle slice and columns, the leading pair transposed, every other column
    ({"lead": (2, 4), "in_features": 3, "out_features": 2}, "a middle slice and columns of a larger buffer"),
    ({"lead": (3, 2), "approximate": "tanh"}, "its two first dimensions transposed"),
    ({"lead": (2, 3, 2), "bias": False, "dtype": "float64"}, "a middle slice and columns of a larger buffer"),
    ({"lead": (2, 3), "out_features": 4}, "every other column of a larger buffer"),
    ({"lead": (4, 2)}, "its two first dimensions transposed"),
)
def out_view_made(case: OpCase, layout: str) -> str:
    """How `layout` makes `out` from its buffer (probes.out_buffer), for a failure message."""
    n, o = (case.lead[-1] if case.lead else 1), case.out_features
    merge = ": not contiguous, and its leading dimensions do not merge into one"
    return {"a slot of a larger buffer": "buffer[1]", "columns of a larger buffer": f"buffer[..., 1:{1 + o}]",
            "a middle slice and columns of a larger buffer": f"buffer[..., 1:{1 + n}, 1:{1 + o}]" + merge,
            "its two first dimensions transposed": "buffer.transpose(0, 1)" + merge,
            "every other column of a larger buffer": "buffer[..., ::2]"}[layout]


def expected_buffer(case: OpCase, layout: str, fill: float, answer: torch.Tensor) -> torch.Tensor:
    buffer, out = probes.out_buffer(case, layout, fill, answer.dtype)
    out.copy_(answer)
    return buffer


@CHECKS.check(stage="out_variant", weight=2)
def out_variant_writes_the_answer(ctx):
    "linear_gelu_out writes the answer into the memory of `out` (a view of a larger buffer too), eagerly and compiled"
    for raw, layout in OUT_VARIANT_CASES:
        case = OpCase(**raw)
        seen = ctx.probe(probes.out_variant, raw, layout)
        want = eager_linear_gelu(case)["out"]
        where = f"linear_gelu_out({case.describe()}), `out` " + (
            "a tensor of its own" if layout == "fresh" else
            f"{layout} ({tuple(want.shape)} inside a buffer {tuple(seen['buffer'].shape)} of 7.0s, out = "
            f"{out_view_made(case, layout)})")
        rule = ("" if layout in ("fresh", "a slot of a larger buffer") else
                " `out` is not contiguous here: out.reshape(...) or out.contiguous() may return a copy, and writing "
                "into a copy leaves out's memory as it was. Write into out itself: out.copy_(result), result "
                "shaped as out. README.md, 'Step 4: an out= variant'.")
        expect(seen["returned"] == "None", f"linear_gelu_out returned {seen['returned']}; an out= op returns None.")
        if _rounding_apart(seen["out"], want):  # the answer, computed in another precision: not a layout problem
            rule = (f" `out` holds the answer up to rounding only: the kernel computed in another dtype than x's "
                    f"({case.dtype}), e.g. a .float() detour that rounds float64 down to float32. Compute in x's "
                    f"own dtype, as the op does. README.md, 'Step 1: the op'.")
        torch.testing.assert_close(seen["out"], want, msg=lambda m: f"after {where}, `out` does not hold the "
                                                                   f"answer:{rule}\n{m}")
        expect(seen["same_memory"],
               f"after {where}, `out` holds the answer but no longer in the memory the caller passed: the kernel "
               "rebound it (`out.data = ...`, `out.set_(...)`) instead of writing into it. A runtime reads the "
               "buffer it allocated: write into out (out.copy_(...)). README.md, 'Step 4: an out= variant'.")
        torch.testing.assert_close(
            seen["buffer"], expected_buffer(case, layout, 7.0, want), msg=lambda m: (
                f"after {where}, the buffer `out` is a view of does not hold the answer in out's place and its 7.0s "
                f"elsewhere: write into out's own memory, and nothing around it. README.md, 'Step 4: an out= "
                f"variant'.\n{m}"))
        compiled = seen["compiled"]
        expect(isinstance(compiled, torch.Tensor),
               f"torch.compile(backend='aot_eager', fullgraph=True) of a function calling linear_gelu_out failed:\n"
               f"  {compiled}")
        torch.testing.assert_close(
            compiled, expected_buffer(case, layout, 0.0, want), msg=lambda m: (
                "inside torch.compile(backend='aot_eager'), the buffer whose view was passed to linear_gelu_out "
                f"does not hold the answer afterwards ({case.describe()}, `out` {layout}). A compiler believes the "
                "schema: if it does not say `out` is written, the call has no effect it must keep, and it may drop "
                f"it; and a kernel must write into out's memory, not rebind it.\n{m}"))
    # blind round 6: half-precision calls large enough to tell a float32 detour from eager (the op's own rule)
    for raw in OUT_VARIANT_HALF_CASES:
        case = OpCase(**raw)
        seen = ctx.probe(probes.out_variant, raw, "fresh")
        want = eager_linear_gelu(case)["out"]
        expect_forward_close(case, seen["out"], want, msg=lambda m: (
            f"after linear_gelu_out({case.describe()}), `out` does not hold the answer:\n{m}"))
        expect_no_float32_detour(case, seen["out"], want, float32_detour(case)["out"], "linear_gelu_out's answer")


def _rounding_apart(got, want: torch.Tensor) -> bool:
    """Whether `got` differs from `want` by rounding only (a computation in a lower precision), not by a layout."""
    return (isinstance(got, torch.Tensor) and got.shape == want.shape and got.dtype == want.dtype
            and not torch.equal(got, want) and torch.allclose(got.double(), want.double(), rtol=1e-2, atol=1e-3))


# blind round 6: an out= kernel that takes a float32 detour for half-precision inputs only (HALF_DTYPE_CASES' first
# two: one bfloat16, one float16)
OUT_VARIANT_HALF_CASES = HALF_DTYPE_CASES[:2]


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


def run_rewrite(ctx, recipe: Any, what: str, *, fused: range, explain: str = "", explain_values: bool = True,
                model: str = "") -> dict:
    """Rewrite the recipe's Dynamo graph with the attempt, check counts, numbers and gradients, return what was seen.

    `fused` is the range of fused-node counts the lesson allows; each fused pair replaces one linear and one gelu
    node. `explain` (the rule the recipe is about) is added to a wrong fused count, and to values or gradients
    that differ from eager if `explain_values`; `model` (the model's listing) to every failure."""
    try:
        return _run_rewrite(ctx, recipe, what, fused=fused, explain=explain, explain_values=explain_values)
    except (CheckFailed, AssertionError) as exc:
        if not model:
            raise
        raise CheckFailed(f"{exc}\nThe model:\n{model}") from None


def _run_rewrite(ctx, recipe: Any, what: str, *, fused: range, explain: str, explain_values: bool) -> dict:
    seen = ctx.probe(probes.rewrite, recipe)
    before, after = seen["before"], seen["after"]
    n_fused = after.get("fused", 0) - before.get("fused", 0)
    code = "\n".join("    " + line for line in seen["code"].strip().splitlines()[-12:])
    expect(n_fused in fused,
           f"{what}: fuse_with_rewriter left {n_fused} fused node(s) in the graph; "
           + (f"expected {fused.start}" if len(fused) == 1 else f"expected {fused.start} to {fused.stop - 1}")
           + "." + (f"\n{explain}" if explain else "") + f"\nThe graph afterwards ends:\n{code}")
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
    try:
        expect(not seen.get("error"), f"{what}: running the rewritten graph forward and backward failed:\n  "
                                      f"{seen.get('error')}\nThe eager model runs forward and backward.")
        compare_runs(seen, probes.eager_run(recipe), what)
    except (CheckFailed, AssertionError) as exc:
        raise CheckFailed(f"{exc}" + (f"\n{explain}" if explain and explain_values else "")) from None
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


CHAINED_VIEW_WRITES = probes.CHAINED_VIEW_WRITES  # writes through a view of a view (blind round 3)
BASE_WRITES = tuple(probes.BASE_WRITES)  # t a view of s, a write into s or another view of it (blind round 5)
VIEW_WRITES = tuple(probes.VIEW_WRITES)  # through views the lesson does not name, and w.T (blind round 6)
# every write into a pair input
LAYOUT_WRITES = IN_PLACE_WRITES + PAIR_INPUT_WRITES + CHAINED_VIEW_WRITES + BASE_WRITES + VIEW_WRITES
WRITTEN = {  # what a write of PAIR_INPUT_WRITES writes into (those of IN_PLACE_WRITES: t)
    "w.mul_(0.5)": "w, the pair's weight", "b.add_(1.0)": "b, the pair's bias",
    "t[0].mul_(0.5)": "t, the pair's input x, through the view t[0]",
    "t.view(-1).add_(1.0)": "t, the pair's input x, through the view t.view(-1)",
    "w.t().mul_(0.5)": "w, the pair's weight, through the view w.t()", "b[1:].zero_()": "b, the pair's bias, through the view b[1:]",
    "torch.transpose(w, 0, 1).mul_(0.5)": "w, the pair's weight, through the view torch.transpose(w, 0, 1) (a "
                                          "function, not a method)",
    "t[0].view(-1).mul_(0.5)": "t, the pair's input x, through the view t[0].view(-1) (a view of a view)",
    "w.t()[1:].mul_(0.5)": "w, the pair's weight, through the view w.t()[1:] (a view of a view)",
    "b[1:].view(-1)[0:2].zero_()": "b, the pair's bias, through the view b[1:].view(-1)[0:2] (a view of a view of "
                                   "a view)",
    # blind round 5: t is a view of s, and the write goes into s, or into another view of s that overlaps t
    "t = s[0]; s.mul_(0.5)": "s, the tensor the pair's input t = s[0] is a view of (its base): that writes into t too",
    "t = s[0]; s[:, 0].mul_(0.5)": "s[:, 0], another view of s, the tensor the pair's input t = s[0] is a view of; "
                                   "s[:, 0] and t share s[0, 0]",
    "t = s[0]; s.view(-1)[:12].add_(1.0)": "s.view(-1)[:12], a view of a view of s, the tensor the pair's input "
                                           "t = s[0] is a view of; its 12 elements are t[0]",
    "t = s.view(4, 3, 4)[:2]; s.mul_(0.5)": "s, the base of the view s.view(4, 3, 4) that the pair's input "
                                            "t = s.view(4, 3, 4)[:2] is a view of (two levels up)",
    "t = s[1].view(2, 3, 4); s[1].mul_(0.5)": "s[1], a second view of s made the same way as the s[1] that the pair's "
                                              "input t = s[1].view(2, 3, 4) is a view of: they share all of t's memory",
    "t = s[0]; s[1].mul_(0.5)": "s[1], another view of s, the tensor the pair's input t = s[0] is a view of; s[1] "
                                "holds none of t's elements, but torch counts writes per base (one version counter "
                                "for s and all its views), so autograd sees t written",
    # blind round 6: an in-place op returns the tensor it wrote; views the lesson's list does not name
    "t = s.mul_(1.0)[0]; s.add_(1.0)": "s, the tensor that s.mul_(1.0) wrote and returned: the pair's input t = "
                                       "s.mul_(1.0)[0] is a view of that result, which IS s (an in-place op returns "
                                       "the tensor it wrote)",
    "t = s[0]; a = s.mul_(1.0); a[0].add_(1.0)": "a[0], where a = s.mul_(1.0) is s itself (an in-place op returns the "
                                                 "tensor it wrote), so a[0] is the pair's input t = s[0]",
    "t.permute(2, 0, 1).mul_(0.5)": "t, the pair's input x, through the view t.permute(2, 0, 1)",
    "t.unsqueeze(0).mul_(0.5)": "t, the pair's input x, through the view t.unsqueeze(0)",
    "w.T.mul_(0.5)": "w, the pair's weight, through the view w.T (Dynamo records getattr(w, 'T'))",
    "w.select(0, 1).mul_(0.5)": "w, the pair's weight, through the view w.select(0, 1)",
    "torch.narrow(b, 0, 1, 2).zero_()": "b, the pair's bias, through the view torch.narrow(b, 0, 1, 2)",
    "t.flatten().add_(1.0)": "t, the pair's input x, through t.flatten() (a view of a contiguous tensor)",
    "torch.movedim(w, 0, 1).mul_(0.5)": "w, the pair's weight, through the view torch.movedim(w, 0, 1)",
    "t.diagonal(dim1=1, dim2=2).mul_(0.5)": "t, the pair's input x, through the view t.diagonal(dim1=1, dim2=2)",
}
NOT_SAVED_BY_EAGER = {"t": "saves x only when the weight requires grad, and here it does not",
                      "w": "saves the weight only when x requires grad, and here it does not",
                      "b": "never saves the bias"}
TRAINS_NAMES = {"x": "x", "w": "the weight", "b": "the bias"}
WRITTEN_T = "t, the pair's input x"
NOT_WRITES = {"u.mul_(2.0)": "`u.mul_(2.0)` writes into u, which the pair does not read",
              "nn.ReLU()(t)": "nn.ReLU() reaches the graph as relu(t, inplace=False), which writes nothing",
              "unrelated": "`other(x * t.abs().mean())` reads t and writes nothing"}


def grad_is_on(block, entry_on: bool = True) -> bool:
    """The grad mode of a layout step (katas.common.strategies.GRAD_LAYOUT_BLOCKS): on inside an enable_grad block,
    and outside every block when the model is called with grad on (`entry_on`)."""
    return (block is True and entry_on) or block == "enable"


def layout_entry(layout: tuple) -> tuple[bool, tuple]:
    """Whether the layout's model is called with grad on, and its steps without the GRAD_LAYOUT_ENTRY_OFF marker."""
    steps = tuple(layout[1])
    if steps and tuple(steps[0]) == GRAD_LAYOUT_ENTRY_OFF:
        return False, steps[1:]
    return True, steps


def layout_rule(layout: tuple) -> tuple[range, str]:
    """For a layout of grad_mode_layouts (or trained_grad_mode_layouts): the fused counts the lesson allows (0 to
    1, exactly 0 or exactly 1), and what the lesson says about the pair, for a failure message. The replacement
    goes before the first reader."""
    entry_on, steps = layout_entry(layout)
    kinds = [kind for kind, _ in steps]
    modes = [grad_is_on(block, entry_on) for _, block in steps]
    first, gelu, reader = kinds.index("linear"), kinds.index("gelu"), kinds.index("reader")
    writes = [kinds[i] for i in range(first + 1, reader) if kinds[i] in LAYOUT_WRITES]
    before = [kind for kind in kinds[:first] if kind in LAYOUT_WRITES]
    later = [kind for kind in kinds[reader + 1:] if kind in LAYOUT_WRITES]
    switch = len({block for _, block in steps[first:reader + 1]}) > 1  # a block opens or closes in between
    same_mode = modes[first] == modes[gelu] == modes[reader]
    trains = tuple(layout[4]) if len(layout) > 4 else ()
    recorded = bool(trains) and not switch and modes[first]  # autograd records the fused op: it saves x, w and b
    if writes:
        at = next(i for i in range(first + 1, reader) if kinds[i] in LAYOUT_WRITES)
        spot = ("between the Linear and the GELU (the window to check starts at the match's first node, the "
                "Linear, not at the GELU)" if at < gelu else "between the GELU and its first reader")
        return range(0, 2), (f"Here `{writes[0].split('; ')[-1]}` writes in place into {WRITTEN.get(writes[0], WRITTEN_T)}, "
                   f"{spot}. The rewriter puts the fused op before the GELU's first reader: fused "
                   "there, it reads the written value. Refuse a match when a node between its first node and the "
                   "insertion point writes in place into one of its inputs (match.placeholder_nodes: x, weight and "
                   "bias alike), directly, through a view of it, or through the tensor it is a view of (its base) "
                   "and that base's other views: anything that shares its memory. README.md, 'In-place writes'.")
    if not switch and recorded and later:
        written = probes.WRITTEN_INPUT.get(later[0], "t")
        requiring = ", ".join(TRAINS_NAMES[name] for name in trains)
        return range(0, 1), (
            f"Here autograd records the pair (grad is on, and {requiring} "
            f"{'requires' if len(trains) == 1 else 'require'} grad), and `{later[0].split('; ')[-1]}` writes in place into "
            f"{WRITTEN.get(later[0], WRITTEN_T)} AFTER the GELU's first reader. That changes no value, but the "
            "fused op saves x, weight and bias for its backward: fused, the backward fails (\"modified by an "
            "inplace operation\"), while eager trains: its Linear + GELU "
            f"{NOT_SAVED_BY_EAGER[written]}. When autograd records a pair (Dynamo's example value of "
            "the GELU's output requires grad: node.meta['example_value'].requires_grad), refuse it if any later "
            "node, to the graph's end, writes into one of its inputs. README.md, 'In-place writes'.")
    if not switch:
        others = [NOT_WRITES[k] for k in kinds[first + 1:reader] if k in NOT_WRITES]
        if before:
            others.append(f"`{before[0].split('; ')[-1]}` writes before the pair, and eager's Linear reads the written value too")
        if later:
            others.append(f"`{later[0].split('; ')[-1]}` writes after the GELU's first reader, and autograd records nothing for this "
                          "pair (nothing it reads requires grad, or grad is off), so the fused op saves nothing "
                          "that the write could spoil")
        return range(1, 2), (
            "Here " + (f"{'; '.join(others)}; and " if others else "")
            + "no grad-mode switch and no in-place write into an input of the pair lies between the Linear and "
            "the GELU's first reader (the place the replacement goes, before any later reader): the pair must be "
            "fused. README.md, "
            + ("'In-place writes'." if others else "'Where the rewriter puts the new node'."))
    if same_mode:
        return range(0, 2), ("Here the Linear, the GELU and the first reader run in the same grad mode, with a closed block "
                   "between them: fusing is allowed and so is refusing, but the values and gradients must stay "
                   "eager's. README.md, 'Where the rewriter puts the new node'.")
    entry = ("" if entry_on else " The model is called under torch.no_grad(): its graph starts with grad off, and "
             "Dynamo writes no switch for that (it writes one only where the mode changes), so the mode before the "
             "first switch is the caller's, not necessarily on.")
    return range(0, 2), ("Here the Linear, the GELU and the GELU's first reader do not all run in the same grad mode: fused "
               "before the first reader, the op would run in another grad mode than the Linear or the GELU did. "
               "Refuse it (a grad-mode switch lies between the match's first node and the insertion point)." + entry
               + " README.md, 'Where the rewriter puts the new node'.")


LAYOUT_READS = {"reader": ("head(h)", "   # the first reader of h"), "reader2": ("tail(h)", "   # another reader"),
                "unrelated": ("other(x * t.abs().mean())", "   # not the pair's")}


def describe_layout(layout: tuple) -> str:
    """A layout of grad_mode_layouts as the forward pass it builds (probes.GradLayout)."""
    entry_on, steps = layout_entry(layout)
    kinds = {kind for kind, _ in steps}
    trains = tuple(layout[4]) if len(layout) > 4 else None
    writes = any(kind in LAYOUT_WRITES for kind in kinds)
    copies = any(probes.WRITTEN_INPUT.get(kind) in ("w", "b") for kind in kinds)
    base = next((kind.split("; ")[0] for kind in kinds if kind in BASE_WRITES), None)  # "t = s[0]"
    if trains is None:
        lines = ["  t = x.detach().clone()   # fc frozen" if writes else "  t = x"]
        if base:
            lines = ["  s = torch.stack((x, x)).detach()   # fc frozen", f"  {base}"]
    else:
        copies = writes = True
        frozen = [name for name, key in (("fc.weight", "w"), ("fc.bias", "b")) if key not in trains]
        if base:
            lines = [("  s = torch.stack((x, x))   # requires grad" if "x" in trains
                      else "  s = torch.stack((x, x)).detach()   # no grad")
                     + (f"; {' and '.join(frozen)} frozen" if frozen else ""), f"  {base}"]
        else:
            lines = [("  t = x * 1   # requires grad" if "x" in trains else "  t = x.detach().clone()   # no grad")
                     + (f"; {' and '.join(frozen)} frozen" if frozen else "")]
    if copies:
        lines.append("  w, b = fc.weight * 1, fc.bias * 1")
    if "u.mul_(2.0)" in kinds:
        lines.append("  u = x.detach().clone()")
    if not entry_on:
        lines.insert(0, "  # the model is called under torch.no_grad(): grad is off from the graph's first node")
    block, inner, y = False, False, False
    for kind, where in steps:
        if where is not True and not block:
            lines.append("  with torch.no_grad():")
        block = where is not True
        if where in ("nested", "enable") and inner != where:
            lines.append("      with torch." + ("no_grad" if where == "nested" else "enable_grad") + "():")
        inner = where if where in ("nested", "enable") else False
        if kind == "gelu":
            text = f"h = {layout[2] if layout[2] == 'F.gelu(z)' else layout[2] + '(z)'}"
        elif kind == "linear":
            text = "z = F.linear(t, w, b)" if copies else "z = fc(t)"
        elif kind in LAYOUT_READS:
            value, comment = LAYOUT_READS[kind]
            text, y = ("y = y + " if y else "y = ") + value + comment, True
        elif kind == "nn.ReLU()(t)":
            text = "r = relu(t)   # relu = nn.ReLU(): Dynamo writes relu(t, inplace=False)"
        elif kind == "u.mul_(2.0)":
            text = "u.mul_(2.0)   # in place, into u: no input of the pair"
        else:
            text = f"{kind.split('; ')[-1]}   # in place, into {WRITTEN.get(kind, WRITTEN_T)}"
        lines.append(("          " if inner else "      " if block else "  ") + text)
    extra = [f" + {name}.sum()" for name, used in (("w", copies), ("b", copies), ("u", "u.mul_(2.0)" in kinds),
                                                    ("r", "nn.ReLU()(t)" in kinds), ("t", writes)) if used]
    if entry_on:
        lines.append("  return y" + "".join(extra))
    else:
        lines += ["  with torch.enable_grad():", "      return y" + "".join(extra)]
    return "\n".join(lines)


EDGE_LAYOUTS = (  # layouts of grad_mode_layouts tried before the random ones: each once let a wrong filter pass
    ("layout", (("linear", False), ("gelu", False), ("reader", False), ("reader2", True)), "F.gelu(z)", 1),
    ("layout", (("linear", True), ("gelu", False), ("reader", True)), "nn.GELU()", 2),
    ("layout", (("linear", True), ("gelu", True), ("t.mul_(0.5)", True), ("reader", True)), "F.gelu(z)", 3),
    ("layout", (("linear", True), ("t += 1", True), ("gelu", True), ("reader", True), ("reader2", True)),
     "nn.GELU('tanh')", 4),
    ("layout", (("linear", True), ("gelu", True), ("unrelated", False), ("reader", True)), "F.gelu(z)", 5),
    ("layout", (("linear", True), ("unrelated", True), ("gelu", True), ("reader", True)), "F.gelu(z)", 6),
    ("layout", (("linear", True), ("gelu", True), ("F.relu(t, inplace=True)", True), ("reader", True)), "F.gelu(z)", 7),
    ("layout", (("linear", False), ("torch.relu_(t)", False), ("gelu", False), ("reader", False)), "nn.GELU()", 8),
    ("layout", (("linear", True), ("gelu", True), ("torch.mul(t, 0.5, out=t)", True), ("reader", True)),
     "F.gelu(z)", 9),
    # blind round 2: which input of the pair is written (weight, bias; through a view), and steps that write into
    # none of them (another tensor; nn.ReLU()'s inplace=False), which must not stop the fusion
    ("layout", (("linear", True), ("gelu", True), ("b.add_(1.0)", True), ("reader", True)), "F.gelu(z)", 10),
    ("layout", (("linear", True), ("w.mul_(0.5)", True), ("gelu", True), ("reader", True)), "nn.GELU()", 11),
    ("layout", (("linear", True), ("gelu", True), ("t[0].mul_(0.5)", True), ("reader", True)), "F.gelu(z)", 12),
    ("layout", (("linear", False), ("gelu", False), ("b[1:].zero_()", False), ("reader", False)),
     "nn.GELU('tanh')", 13),
    ("layout", (("linear", True), ("gelu", True), ("w.t().mul_(0.5)", True), ("reader", True)), "F.gelu(z)", 14),
    ("layout", (("linear", True), ("t.view(-1).add_(1.0)", True), ("gelu", True), ("reader", True)), "nn.GELU()", 15),
    ("layout", (("linear", True), ("gelu", True), ("u.mul_(2.0)", True), ("reader", True)), "F.gelu(z)", 16),
    ("layout", (("linear", True), ("gelu", True), ("nn.ReLU()(t)", True), ("reader", True)), "F.gelu(z)", 17),
    ("layout", (("linear", True), ("gelu", True), ("torch.transpose(w, 0, 1).mul_(0.5)", True), ("reader", True)),
     "nn.GELU()", 18),  # a view made by a torch function (mutation run: a filter that follows view methods only)
    # blind round 3: views of views; where the write sits (before the pair, between two readers, after every
    # reader: fused, as autograd records nothing here); and pairs autograd records (a fifth element: which inputs
    # require grad), where a write after the first reader into an input the fused op saves refuses the pair
    ("layout", (("linear", True), ("gelu", True), ("t[0].view(-1).mul_(0.5)", True), ("reader", True)),
     "F.gelu(z)", 19),
    ("layout", (("linear", True), ("w.t()[1:].mul_(0.5)", True), ("gelu", True), ("reader", True)), "nn.GELU()", 20),
    ("layout", (("linear", False), ("gelu", False), ("b[1:].view(-1)[0:2].zero_()", False), ("reader", False)),
     "F.gelu(z)", 21),
    ("layout", (("t.mul_(0.5)", True), ("linear", True), ("gelu", True), ("reader", True)), "F.gelu(z)", 22),
    ("layout", (("linear", True), ("gelu", True), ("reader", True), ("t.mul_(0.5)", True), ("reader2", True)),
     "nn.GELU()", 23),
    ("layout", (("linear", True), ("gelu", True), ("reader", True), ("reader2", True), ("b.add_(1.0)", True)),
     "F.gelu(z)", 24),
    ("layout", (("linear", True), ("gelu", True), ("reader", True), ("b.add_(1.0)", True), ("reader2", True)),
     "F.gelu(z)", 25, ("x", "w", "b")),
    ("layout", (("linear", True), ("gelu", True), ("reader", True), ("t.mul_(0.5)", True)), "nn.GELU()", 26,
     ("x", "b")),
    ("layout", (("linear", True), ("gelu", True), ("reader", True), ("w.mul_(0.5)", True)), "F.gelu(z)", 27,
     ("w", "b")),
    ("layout", (("linear", True), ("gelu", True), ("reader", True), ("b[1:].view(-1)[0:2].zero_()", True)),
     "nn.GELU('tanh')", 28, ("b",)),
    ("layout", (("b.add_(1.0)", True), ("linear", True), ("gelu", True), ("reader", True)), "F.gelu(z)", 29,
     ("x", "w", "b")),
    ("layout", (("linear", False), ("gelu", False), ("reader", False), ("b.add_(1.0)", True)), "F.gelu(z)", 30,
     ("x", "w", "b")),
    # blind round 4: the grad mode switched before the pair (a closed block first), so a filter that takes the
    # mode before any switch as unknown meets a switch; then the GELU alone in a block, the Linear alone in one,
    # nested blocks, enable_grad inside no_grad, and a block between the Linear and the GELU that closes before
    # the reader (katas.common.strategies.GRAD_LAYOUT_BLOCKS)
    ("layout", (("unrelated", False), ("linear", True), ("gelu", False), ("reader", True)), "F.gelu(z)", 31),
    ("layout", (("unrelated", False), ("unrelated", True), ("linear", False), ("gelu", True), ("reader", True)),
     "nn.GELU()", 32),
    ("layout", (("unrelated", False), ("linear", True), ("gelu", True), ("reader", False)), "nn.GELU('tanh')", 33),
    ("layout", (("unrelated", False), ("linear", True), ("gelu", "nested"), ("reader", True)), "F.gelu(z)", 34),
    ("layout", (("unrelated", "nested"), ("linear", False), ("gelu", "enable"), ("reader", False)), "nn.GELU()", 35),
    ("layout", (("linear", False), ("gelu", "enable"), ("reader", False)), "F.gelu(z)", 36),
    ("layout", (("unrelated", False), ("linear", "enable"), ("gelu", "nested"), ("reader", "enable")),
     "F.gelu(z)", 37),
    ("layout", (("unrelated", False), ("linear", True), ("unrelated", False), ("gelu", True), ("reader", True)),
     "nn.GELU()", 38),
    ("layout", (("unrelated", "enable"), ("linear", False), ("unrelated", "enable"), ("gelu", False),
                ("reader", False)), "F.gelu(z)", 39),
    # blind round 5: the pair's input t is a view of s, and the write goes into s (its base), into another view of
    # s, through a chain of views, or into the base of t's base; between the pair and its reader, or (autograd
    # records the pair) after it; a write into s before the pair changes nothing
    ("layout", (("linear", True), ("gelu", True), ("t = s[0]; s.mul_(0.5)", True), ("reader", True)), "F.gelu(z)", 40),
    ("layout", (("linear", True), ("t = s[0]; s[:, 0].mul_(0.5)", True), ("gelu", True), ("reader", True)),
     "nn.GELU()", 41),
    ("layout", (("linear", False), ("gelu", False), ("t = s[0]; s.view(-1)[:12].add_(1.0)", False), ("reader", False)),
     "nn.GELU('tanh')", 42),
    ("layout", (("linear", True), ("gelu", True), ("t = s.view(4, 3, 4)[:2]; s.mul_(0.5)", True), ("reader", True)),
     "F.gelu(z)", 43),
    ("layout", (("linear", True), ("gelu", True), ("t = s[1].view(2, 3, 4); s[1].mul_(0.5)", True), ("reader", True)),
     "nn.GELU()", 44),
    ("layout", (("linear", True), ("gelu", True), ("reader", True), ("t = s[0]; s.mul_(0.5)", True)), "F.gelu(z)", 45,
     ("x", "b")),
    ("layout", (("linear", True), ("gelu", True), ("reader", True), ("t = s[0]; s[:, 0].mul_(0.5)", True)),
     "nn.GELU()", 46, ("x",)),
    ("layout", (("t = s[0]; s.mul_(0.5)", True), ("linear", True), ("gelu", True), ("reader", True)), "F.gelu(z)", 47),
    ("layout", (("linear", True), ("gelu", True), ("reader", True), ("t = s[0]; s.mul_(0.5)", True)), "F.gelu(z)", 48),
    ("layout", (("linear", True), ("gelu", True), ("reader", True), ("t = s[0]; s[1].mul_(0.5)", True)),
     "nn.GELU('tanh')", 49, ("x", "b")),
    ("layout", (("linear", True), ("gelu", True), ("reader", True), ("t = s.view(4, 3, 4)[:2]; s.mul_(0.5)", True)),
     "F.gelu(z)", 50, ("x",)),
    # blind round 6: the model called under torch.no_grad(), so the graph starts with grad off and no switch says
    # so: the Linear with grad off, the GELU and its reader in an enable_grad block (refuse, or eager's frozen Linear
    # gets gradients); the whole pair in one enable_grad block, or with grad off throughout (fuse)
    ("layout", (GRAD_LAYOUT_ENTRY_OFF, ("linear", True), ("gelu", "enable"), ("reader", "enable")), "F.gelu(z)", 51),
    ("layout", (GRAD_LAYOUT_ENTRY_OFF, ("unrelated", True), ("linear", "enable"), ("gelu", "enable"),
                ("reader", "enable")), "nn.GELU()", 52),
    ("layout", (GRAD_LAYOUT_ENTRY_OFF, ("linear", True), ("gelu", True), ("reader", True)), "nn.GELU('tanh')", 53),
)


def _window_kinds(layout: tuple) -> set:
    """The writes a layout places between its Linear and the GELU's first reader."""
    kinds = [kind for kind, _ in layout_entry(layout)[1]]
    return set(kinds[kinds.index("linear") + 1:kinds.index("reader")]) & set(LAYOUT_WRITES)


# blind round 6: every kind of write, once, between the GELU and its first reader with grad on (a random layout meets
# few of them per run): those no edge layout above already puts there
WINDOW_LAYOUTS = tuple(
    ("layout", (("linear", True), ("gelu", True), (kind, True), ("reader", True)),
     ("F.gelu(z)", "nn.GELU()", "nn.GELU('tanh')")[i % 3], 60 + i)
    for i, kind in enumerate(k for k in LAYOUT_WRITES if not any(k in _window_kinds(e) for e in EDGE_LAYOUTS)))


@CHECKS.check(stage="rewrite", weight=3)
def rewriter_moves_no_pair_past_a_switch_or_write(ctx):
    "pairs, readers, no_grad blocks and in-place writes laid out at random: safe pairs fused, values and gradients eager's"
    def prop(layout: tuple, show: bool = False) -> None:
        fused, explain = layout_rule(layout)
        if len(layout) > 4:
            try:
                probes.eager_run(layout)
            except RuntimeError:
                return  # eager's own backward fails here (a write into an input eager saved): nothing to compare
        run_rewrite(ctx, layout, "the Dynamo graph of the model " + ("below" if show else "shown at the end"),
                    fused=fused, explain=explain, explain_values=fused.start == 0,
                    model=describe_layout(layout) if show else "")

    for layout in EDGE_LAYOUTS + WINDOW_LAYOUTS:
        prop(layout, show=True)
    fuzz(ctx, grad_mode_layouts(writes=LAYOUT_WRITES, others=tuple(NOT_PAIR_INPUT_WRITES)), prop,
         describe=describe_layout, max_examples=3 if not ctx.deep else 18)
    fuzz(ctx, trained_grad_mode_layouts(writes=LAYOUT_WRITES, others=tuple(NOT_PAIR_INPUT_WRITES)), prop,
         describe=describe_layout, max_examples=3 if not ctx.deep else 18)
    fuzz(ctx, grad_mode_block_layouts(), prop, describe=describe_layout, max_examples=3 if not ctx.deep else 18)


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

def why_training_fused_wrongly(ctx, recipe: Any, fused: range) -> str:
    """Why a training step ran a wrong number of fused calls: the attempt's own fuse_with_rewriter on the same
    model's Dynamo graph tells a pattern that misses a form from a backend that fuses in the wrong place."""
    try:
        seen = ctx.probe(probes.rewrite, recipe)
        by_rewriter = seen["after"].get("fused", 0) - seen["before"].get("fused", 0)
    except Exception:  # noqa: BLE001 - the rewrite checks report its errors
        by_rewriter = None
    if by_rewriter is not None and by_rewriter not in fused:
        return (f"Your fuse_with_rewriter itself fuses {by_rewriter} pair(s) of this model's Dynamo graph: the "
                "rewrite misses pairs before training even starts, wherever the backend runs it. Dynamo writes "
                "F.gelu(z) with no keyword, nn.GELU() with approximate='none' and the tanh GELU with "
                "approximate='tanh': one pattern per form, each with its own replacement (the rewrite checks name "
                "the form missed). README.md, 'Step 5: the rewrite'.")
    return ("Your fuse_with_rewriter fuses the right pairs of this model's Dynamo graph, so the backend runs it in "
            "the wrong place or not at all. Fuse on Dynamo's graph, before aot_autograd splits it: after the split, "
            "the forward graph also returns the pre-GELU value for the backward, and no pair is safe. README.md, "
            "'Step 6: training'.")


def run_training(ctx, recipe: Any, batches: list[list[int]], what: str, *, fused: range,
                 all_need_grad: bool = True) -> dict:
    """Train one step per batch shape through the attempt's backend; check the fused calls forward and backward
    (`all_need_grad`: every fused call's output needs a gradient, so each has a backward call) and every number."""
    seen = ctx.probe(probes.train, recipe, batches)
    forward, backward = seen["forward"], seen["backward"]
    if forward["fused"] not in fused:
        expect(False, f"{what}: a training step compiled with npu_training_backend ran linear_gelu "
                      f"{forward['fused']} time(s) in the forward pass (and aten.gelu {forward['aten.gelu']} "
                      "time(s)); expected " + (f"{fused.start}" if len(fused) == 1 else
                                                f"{fused.start} to {fused.stop - 1}") + ". "
               + why_training_fused_wrongly(ctx, recipe, fused))
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
    "npu_training_backend stays right when the batch size changes, and Dynamo compiles once more, not once per size"
    spec = MLPSpec(in_features=3, layers=(LayerSpec(4, True, "gelu"), LayerSpec(2, True, "gelu_tanh")),
                   batch_shape=(2,), seed=11)
    seen = run_training(ctx, spec, [[2], [5], [7]], "a 2-layer MLP called with batch 2, then 5, then 7",
                        fused=range(2, 3))
    expect(seen["graphs"] <= 2,
           f"a 2-layer MLP called with batch 2, then 5, then 7 made Dynamo call npu_training_backend "
           f"{seen['graphs']} times; expected 2 (batch 2, then one graph with a symbolic batch for 5 and 7). A third "
           "compile means the symbolic batch was turned into a number while aot_autograd traced forward and "
           "backward: a fake kernel (of linear_gelu or of linear_gelu_backward) that int()s a size. README.md, "
           "'Step 2: the fake kernel'.")


@CHECKS.check(stage="training", weight=2)
def training_respects_no_grad_blocks(ctx):
    "training through npu_training_backend beside a `with torch.no_grad():` block keeps eager's gradients"
    for recipe in ("grad frozen_pair", "grad frozen_linear"):
        run_training(ctx, recipe, [[2, 3]], f"a training step of the model '{recipe[5:]}'", fused=range(0, 2),
                     all_need_grad=False)
