"""Hidden suspects for kata 2's checks. Learners: do not read this file; solve the kata from README.md.

Every line where Dynamo breaks the graph carries a hand-written annotation

    # BREAK <label>: <cause>

`label` names the break (unique across this file and helpers_hidden.py, which holds the annotated lines of
a helper in another module) and `cause` the reason the lesson defines, as torch 2.13 words it (the first line). The checks read the
annotations to learn the expected file and line of every break; each `Case` below lists its breaks' labels
in the order they happen when the function runs on the case's inputs and keyword arguments. Nothing here
is computed by the reference solution.
"""
from __future__ import annotations

import importlib.util
import logging
import random
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn as nn

log = logging.getLogger("fx_katas.hidden")


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _sibling(filename: str, module_name: str):
    """A module beside this file (kata folders are not packages), loaded once under `module_name`."""
    if module_name not in sys.modules:
        spec = importlib.util.spec_from_file_location(module_name, Path(__file__).resolve().with_name(filename))
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return sys.modules[module_name]


helpers = _sibling("helpers_hidden.py", "kata02_helpers_hidden")


# --- what a finder must pass on and tell apart --------------------------------------------------------------

def keyword_gate(x, *, exact=False):
    y = x.exp()
    if exact:
        y = y / y.sum().item()  # BREAK kw_item: Unsupported Tensor.item() call with capture_scalar_outputs=False
    return y


def two_files(x):
    y = x.sigmoid()
    print("two_files: calling the helper")  # BREAK two_files_print: Failed to trace builtin operator
    return helpers.peak_scaled(y)


def breaks_then_raises(x):
    y = x.cos()
    print("breaks_then_raises: about to reject the input")  # BREAK raise_print: Failed to trace builtin operator
    raise ValueError("breaks_then_raises: this input is rejected")


# --- one break, each with ops before it: the kinds explain() does report --------------------------------

def norm_ratio(a, b):
    ratio = (a.norm() / b.norm()).item()  # BREAK ratio_item: Unsupported Tensor.item() call with capture_scalar_outputs=False
    return a * ratio


def pick_branch(x):
    y = x * 3
    if y.mean() > 0:  # BREAK pick_if: Data-dependent branching
        return y.exp()
    return -y


def nonzero_rows(x):
    hits = torch.nonzero(x > 0.5)  # BREAK rows_nonzero: Dynamic shape operator
    return hits.float().mean(dim=0)


def float_tolist(x):
    y = x.sigmoid()
    values = y.tolist()  # BREAK floats_tolist: Tensor.tolist() with non-integer tensor
    return torch.tensor([v * 2 for v in values])


def logs_midway(x):
    y = x.cos()
    log.info("logs_midway: %s", y.shape)  # BREAK mid_log: logging.Logger method not supported for non-export cases
    return y.sin()


@torch.compiler.disable
def _opaque_scale(t):
    return t * 0.5


def calls_disabled(x):
    y = x + 1
    z = _opaque_scale(y)  # BREAK calls_disabled: Skip calling `torch.compiler.disable()`d function
    return z.relu()


def explicit_break(x):
    y = x.tanh()
    torch._dynamo.graph_break()  # BREAK explicit: Call to `torch._dynamo.graph_break()`
    return y * y


class GatedUnit(nn.Module):
    """A module whose forward branches on a tensor value."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        gate = self.proj(x).sigmoid()
        if gate.sum() > 1:  # BREAK gated_if: Data-dependent branching
            return x * gate
        return x


# --- breaks torch._dynamo.explain() does not report -----------------------------------------------------

def warns_first(x):
    warnings.warn("warns_first: legacy path")  # BREAK warn_first: Attempted to call function marked as skipped
    return x.exp() - 1


def random_first(x):
    jitter = random.random()  # BREAK random_first: Attempted to call function marked as skipped
    return x.sin() + 0 * jitter


def prints_in_loop(x):
    for step in range(3):
        x = x * 0.5
        print("prints_in_loop: step", step)  # BREAK loop_print: Failed to trace builtin operator
    return x


class _Timer:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def prints_in_with(x):
    y = x * 2
    with _Timer():
        y = y + 1
        print("prints_in_with: inside the timer")  # BREAK with_print: Failed to trace builtin operator
    return y


def item_in_while(x):
    y = x.abs() + 1
    while y.max().item() > 1:  # BREAK while_item: Unsupported Tensor.item() call with capture_scalar_outputs=False
        y = y / 2
    return y


def _shout(t):
    print("shout:", t.shape)  # BREAK shout: Failed to trace builtin operator
    return t * 2


def calls_a_chatty_helper(x):
    y = x.relu()
    z = _shout(y)
    return z.sum()


def no_breaks(x, w):
    h = torch.relu(x @ w)
    return h.softmax(dim=-1)


# --- several breaks: execution order, and one entry per line ---------------------------------------------

def two_kinds(x):
    print("two_kinds: start")  # BREAK two_print: Failed to trace builtin operator
    y = x * 2
    s = y.sum().item()  # BREAK two_item: Unsupported Tensor.item() call with capture_scalar_outputs=False
    return y - s


def helper_then_item(x):
    y = _later_helper(x)
    peak = y.max().item()  # BREAK tail_item: Unsupported Tensor.item() call with capture_scalar_outputs=False
    return y / (peak + 1)


def _later_helper(t):
    u = t.cos()
    warnings.warn("later helper")  # BREAK later_warn: Attempted to call function marked as skipped
    return u + 1


def same_helper_twice(x):
    a = _shout(x)
    b = _shout(a + 1)
    return a + b


def branch_then_mask(x):
    y = x + 1
    if y.sum() > 0:  # BREAK branch_if: Data-dependent branching
        y = y[y > 1]  # BREAK branch_mask: Dynamic shape operator
    return y.sum()


def three_kinds(x, coeffs):
    y = x * 2
    torch._dynamo.graph_break()  # BREAK three_explicit: Call to `torch._dynamo.graph_break()`
    c = coeffs.tolist()  # BREAK three_tolist: Tensor.tolist() with non-integer tensor
    z = y * c[0]
    idx = torch.nonzero(z)  # BREAK three_nonzero: Dynamic shape operator
    return idx.sum()


# --- blind round 2: one line reported with two reasons, a module's hooks, side effects, files interleaved ---

def item_then_print(x):
    y = x * 2
    print("peak", y.abs().max().item())  # BREAK item_then_print: Unsupported Tensor.item() call with capture_scalar_outputs=False
    return y + 1


def _announce(module, args):
    print("HookedScale: input of shape", tuple(args[0].shape))  # BREAK hook_print: Failed to trace builtin operator


class HookedScale(nn.Module):
    """A module whose forward pre-hook breaks: calling the module runs the hook, calling .forward does not."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.full((3,), 2.0))
        self.register_forward_pre_hook(_announce)

    def forward(self, x):
        return x * self.scale


RUNS: list[int] = []  # one entry per time `counted` or `counted_no_break` runs (the probe clears it first)


def counted(x):
    RUNS.append(1)
    y = x.relu()
    print("counted: ran once more")  # BREAK counted_print: Failed to trace builtin operator
    return y + 1


def counted_no_break(x):
    RUNS.append(1)
    return (x.relu() * 2).sum()


# Steps that break once each, here and in helpers_hidden.py; hidden.chain runs a drawn sequence of them, taken
# from both files in turn (checks.interleaved_steps).
def step_print(t):
    u = t + 1
    print("step_print")  # BREAK step_print: Failed to trace builtin operator
    return u * 2


def step_item(t):
    u = t.sin()
    return u * u.sum().item()  # BREAK step_item: Unsupported Tensor.item() call with capture_scalar_outputs=False


def step_explicit(t):
    u = t.cos()
    torch._dynamo.graph_break()  # BREAK step_explicit: Call to `torch._dynamo.graph_break()`
    return u - 1


def chain(x, *steps):
    """Runs the steps in order, without a loop (a break inside a loop would make the whole frame fall back)."""
    if len(steps) == 2:
        return steps[1](steps[0](x))
    if len(steps) == 3:
        return steps[2](steps[1](steps[0](x)))
    return steps[3](steps[2](steps[1](steps[0](x))))


STEPS = {name: fn for name, fn in (("step_print", step_print), ("step_item", step_item),
                                   ("step_explicit", step_explicit), ("step_tolist", helpers.step_tolist),
                                   ("step_warn", helpers.step_warn), ("step_nonzero", helpers.step_nonzero))}
STEP_FILES = {name: ("suspects_hidden.py" if fn.__module__ == __name__ else "helpers_hidden.py")
              for name, fn in STEPS.items()}


# --- the cases the checks run ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable[..., Any]
    make_args: Callable[[], tuple]
    breaks: tuple[str, ...]  # labels of the annotated lines, in execution order
    note: str = ""  # why this case is here, shown to the learner when it fails
    make_kwargs: Callable[[], dict] = field(default=dict)  # keyword arguments for the call


def _module_case() -> Callable[..., Any]:
    torch.manual_seed(0)
    unit = GatedUnit()
    with torch.no_grad():
        unit.proj.bias.fill_(3.0)  # sigmoid(...) ~ 1 per feature, so the gate's sum (~4) is above 1
    return unit


CASES: dict[str, Case] = {case.name: case for case in (
    Case("norm_ratio", norm_ratio, lambda: (torch.randn(5, generator=_g(1)), torch.randn(5, generator=_g(2))),
         ("ratio_item",)),
    Case("pick_branch", pick_branch, lambda: (torch.rand(4, generator=_g(3)) + 0.1,), ("pick_if",)),
    Case("nonzero_rows", nonzero_rows, lambda: (torch.rand(4, 3, generator=_g(4)),), ("rows_nonzero",)),
    Case("float_tolist", float_tolist, lambda: (torch.randn(4, generator=_g(5)),), ("floats_tolist",)),
    Case("logs_midway", logs_midway, lambda: (torch.randn(3, generator=_g(6)),), ("mid_log",)),
    Case("calls_disabled", calls_disabled, lambda: (torch.randn(3, generator=_g(7)),), ("calls_disabled",)),
    Case("explicit_break", explicit_break, lambda: (torch.randn(3, generator=_g(8)),), ("explicit",)),
    Case("GatedUnit", _module_case(), lambda: (torch.randn(2, 4, generator=_g(9)),), ("gated_if",),
         "an nn.Module: compile the module and the break is reported inside its forward"),
    Case("warns_first", warns_first, lambda: (torch.randn(3, generator=_g(10)),), ("warn_first",),
         "the break comes before any op, so no graph precedes it: explain() has no graph to attach it to"),
    Case("random_first", random_first, lambda: (torch.randn(3, generator=_g(11)),), ("random_first",),
         "the break comes before any op, so no graph precedes it: explain() has no graph to attach it to"),
    Case("prints_in_loop", prints_in_loop, lambda: (torch.randn(3, generator=_g(12)),), ("loop_print",),
         "a break inside a loop makes Dynamo give up on the whole frame: it runs eagerly, zero graphs, "
         "and explain() reports -1 breaks"),
    Case("prints_in_with", prints_in_with, lambda: (torch.randn(3, generator=_g(13)),), ("with_print",),
         "a break inside a `with` block of a context manager Dynamo cannot split makes the whole frame fall "
         "back to eager: zero graphs"),
    Case("item_in_while", item_in_while, lambda: (torch.randn(3, generator=_g(14)),), ("while_item",),
         "the loop condition breaks; the resumed frame then falls back to eager because the break is in a "
         "loop, and Dynamo reports the same line a second time"),
    Case("calls_a_chatty_helper", calls_a_chatty_helper, lambda: (torch.randn(3, generator=_g(15)),), ("shout",),
         "the break is inside a helper the function calls: report the line that broke (in the helper), not "
         "the call site"),
    Case("no_breaks", no_breaks, lambda: (torch.randn(2, 3, generator=_g(16)), torch.randn(3, 4, generator=_g(17))),
         (), "a function Dynamo captures whole has no breaks: the answer is an empty list"),
    Case("two_kinds", two_kinds, lambda: (torch.randn(3, generator=_g(18)),), ("two_print", "two_item")),
    Case("helper_then_item", helper_then_item, lambda: (torch.randn(3, generator=_g(19)),),
         ("later_warn", "tail_item"),
         "the helper is defined below its caller but runs first: execution order is not line order"),
    Case("same_helper_twice", same_helper_twice, lambda: (torch.randn(3, generator=_g(20)),), ("shout",),
         "the same line breaks on both calls (and Dynamo reports it again for the helper's own frame): "
         "one entry per line"),
    Case("branch_then_mask", branch_then_mask, lambda: (torch.rand(4, generator=_g(21)) + 0.5,),
         ("branch_if", "branch_mask")),
    Case("three_kinds", three_kinds, lambda: (torch.randn(4, generator=_g(22)), torch.randn(2, generator=_g(23))),
         ("three_explicit", "three_tolist", "three_nonzero")),
    Case("keyword_gate", keyword_gate, lambda: (torch.randn(4, generator=_g(24)),), ("kw_item",),
         "the break happens only when the keyword argument exact=True reaches the function: pass **kwargs on",
         make_kwargs=lambda: {"exact": True}),
    Case("two_files", two_files, lambda: (torch.rand(3, generator=_g(25)) + 0.5,), ("two_files_print", "helper_item"),
         "two breaks on the same line number in two different files (the helper lives in another module): "
         "two breaks, told apart by their filename"),
    Case("breaks_then_raises", breaks_then_raises, lambda: (torch.randn(3, generator=_g(26)),), ("raise_print",),
         "the function raises after its break, so the finder's clean-up must run on the way out too"),
    Case("item_then_print", item_then_print, lambda: (torch.tensor([1.0, -3.0]),), ("item_then_print",),
         "one line breaks twice, first at `.item()`, then at `print`: Dynamo reports it twice with two reasons, "
         "and the entry keeps the first report's reason"),
    Case("HookedScale", HookedScale(), lambda: (torch.randn(2, 3, generator=_g(27)),), ("hook_print",),
         "an nn.Module with a forward pre-hook that breaks: compile and call the module itself, so its hooks run "
         "as they do when the module is called (module.forward skips them)"),
    Case("counted", counted, lambda: (torch.randn(3, generator=_g(28)),), ("counted_print",),
         "the function appends to a list each time it runs: the finder runs it exactly once"),
    Case("counted_no_break", counted_no_break, lambda: (torch.randn(3, generator=_g(29)),), (),
         "the function appends to a list each time it runs and Dynamo captures it whole: the finder runs it exactly "
         "once, and an empty report is no reason to run it again"),
)}
