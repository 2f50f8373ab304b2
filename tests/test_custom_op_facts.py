"""Every behaviour kata 7's lesson states about torch.library and the subgraph rewriter, measured on the installed
torch (2.13.0).

A torch upgrade that changes one of them fails here, naming the sentence of katas/07_custom_ops/README.md to rewrite.
Ops made here live in the namespace `kata7facts`, apart from the reference's `npu` ops.
"""
from __future__ import annotations

from typing import Optional

import pytest
import torch
import torch._dynamo
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.subgraph_rewriter import replace_pattern, replace_pattern_with_filters

from checker.core.manifest import KATAS_DIR, REPO_ROOT
from checker.core.modules import load_module

reference = load_module(REPO_ROOT / "solutions" / "07_custom_ops" / "vendor_op.py", "kata07_reference_for_facts")
probes = load_module(KATAS_DIR / "07_custom_ops" / "hidden" / "probes.py", "kata07_probes_for_facts")
kata3 = load_module(REPO_ROOT / "solutions" / "03_fusion_guard" / "fusion.py", "kata03_reference_for_kata07_facts")


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def dynamo_graph(model: nn.Module, x: torch.Tensor) -> torch.fx.GraphModule:
    graphs = []
    torch.compile(model, backend=lambda gm, _: graphs.append(gm) or gm.forward, fullgraph=True)(x)
    return graphs[0]


def calls(gm: torch.fx.GraphModule) -> list[tuple[str, tuple, dict]]:
    return [(getattr(n.target, "__name__", str(n.target)), n.args, n.kwargs) for n in gm.graph.nodes
            if n.op == "call_function"]


# --- Step 1 and 4: schemas ------------------------------------------------------------------------------------

def test_custom_op_reads_the_schema_from_type_hints_and_mutates_args():
    assert str(reference.linear_gelu._opoverload._schema) == (
        'npu::linear_gelu(Tensor x, Tensor weight, Tensor? bias, str approximate="none") -> Tensor')
    assert str(reference.linear_gelu_out._opoverload._schema) == (
        'npu::linear_gelu_out(Tensor x, Tensor weight, Tensor? bias, Tensor(a3!) out, str approximate="none") -> ()')


def test_opcheck_runs_four_tests_and_the_reference_passes_them():
    x, w, b = torch.randn(2, 3, 4, requires_grad=True), torch.randn(5, 4, requires_grad=True), torch.randn(5)
    report = torch.library.opcheck(reference.linear_gelu, (x, w, b, "tanh"))
    assert report == {"test_schema": "SUCCESS", "test_autograd_registration": "SUCCESS",
                      "test_faketensor": "SUCCESS", "test_aot_dispatch_dynamic": "SUCCESS"}


@torch.library.custom_op("kata7facts::returns_its_input", mutates_args=())
def returns_its_input(x: torch.Tensor) -> torch.Tensor:
    return x.view(-1)


def test_a_custom_op_may_not_return_an_input_or_a_view_of_one():
    with pytest.raises(RuntimeError, match="must not al"):
        returns_its_input(torch.ones(2))


@torch.library.custom_op("kata7facts::write_undeclared", mutates_args=())
def write_undeclared(x: torch.Tensor, out: torch.Tensor) -> None:
    out.copy_(x * 2)


@write_undeclared.register_fake
def _write_undeclared_fake(x, out):
    return None


def test_an_undeclared_write_fails_opchecks_schema_test_and_compilers_drop_the_call():
    """README 'Step 4': eager is right, opcheck's test_schema names the argument, and aot_eager and inductor drop
    the call."""
    report = torch.library.opcheck(write_undeclared, (torch.ones(3), torch.zeros(3)), raise_exception=False)
    assert "Argument out is not defined as mutable but was mutated" in str(report["test_schema"])

    def double_into_buffer(x):
        out = torch.zeros(3)
        write_undeclared(x, out)
        return out + 0

    assert torch.equal(double_into_buffer(torch.ones(3)), torch.full((3,), 2.0))
    for backend in ("aot_eager", "inductor"):
        torch._dynamo.reset()
        assert torch.equal(torch.compile(double_into_buffer, backend=backend, fullgraph=True)(torch.ones(3)),
                           torch.zeros(3)), backend


# --- Step 2: fake kernels -------------------------------------------------------------------------------------

@torch.library.custom_op("kata7facts::linear_int_sizes", mutates_args=())
def linear_int_sizes(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return F.linear(x, weight)


@linear_int_sizes.register_fake
def _linear_int_sizes_fake(x, weight):
    return x.new_empty((int(x.shape[0]), int(weight.shape[0])))


def test_a_fake_kernel_that_ints_its_sizes_passes_opcheck_and_breaks_export_with_a_dim():
    assert all(v == "SUCCESS" for v in torch.library.opcheck(
        linear_int_sizes, (torch.randn(3, 4), torch.randn(5, 4)), raise_exception=False).values())

    class Calls(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(5, 4))

        def forward(self, x):
            return linear_int_sizes(x, self.weight)

    with pytest.raises(Exception, match="Constraints violated"):
        torch.export.export(Calls(), (torch.randn(3, 4),), dynamic_shapes=({0: torch.export.Dim("batch")},))


@torch.library.custom_op("kata7facts::gelu_grad_by_autograd", mutates_args=())
def gelu_grad_by_autograd(grad: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    with torch.enable_grad():
        leaf = z.detach().requires_grad_()
        return torch.autograd.grad(F.gelu(leaf), leaf, grad)[0]


@gelu_grad_by_autograd.register_fake
def _gelu_grad_by_autograd_fake(grad, z):
    return torch.empty_like(z)


def test_autograd_does_not_run_inside_a_kernel_even_eagerly():
    """README 'Step 3': a kernel runs below autograd, so torch.autograd.grad there fails, enable_grad or not."""
    with pytest.raises(RuntimeError, match="does not require grad"):
        gelu_grad_by_autograd(torch.randn(3), torch.randn(3))


# --- Step 5: how Dynamo writes the pair, and what the matcher does --------------------------------------------

class Pair(nn.Module):
    def __init__(self, act, bias=True):
        super().__init__()
        self.fc, self.act = nn.Linear(4, 4, bias=bias), act

    def forward(self, x):
        return self.act(self.fc(x))


def test_dynamo_writes_the_gelu_keyword_as_the_source_did_and_none_for_a_missing_bias():
    x = torch.randn(2, 4)
    (_, _, module_kwargs), = [c for c in calls(dynamo_graph(Pair(nn.GELU()), x)) if c[0] == "gelu"]
    (_, _, functional_kwargs), = [c for c in calls(dynamo_graph(Pair(lambda z: F.gelu(z)), x)) if c[0] == "gelu"]
    (_, linear_args, _), = [c for c in calls(dynamo_graph(Pair(nn.GELU(), bias=False), x)) if c[0] == "linear"]
    assert module_kwargs == {"approximate": "none"} and functional_kwargs == {} and linear_args[2] is None


def _pattern_no_keyword(x, w, b):
    return torch._C._nn.gelu(torch._C._nn.linear(x, w, b))


def _fused_none(x, w, b):
    return reference.linear_gelu(x, w, b, "none")


def test_a_pattern_matches_its_keywords_as_written_and_a_placeholder_matches_none():
    x = torch.randn(2, 4)
    fused = lambda model, **kw: len(replace_pattern_with_filters(  # noqa: E731
        dynamo_graph(model, x), _pattern_no_keyword, _fused_none, **kw))
    assert fused(Pair(lambda z: F.gelu(z))) == 1
    assert fused(Pair(lambda z: F.gelu(z), bias=False)) == 1  # b matched the literal None
    assert fused(Pair(nn.GELU())) == 0  # approximate='none' written out: another form
    assert fused(Pair(nn.GELU()), ignore_literals=True) == 0  # a keyword present vs absent still differs


def test_ignore_literals_matches_tanh_with_a_none_pattern_and_the_replacement_keeps_its_own_literal():
    x = torch.randn(2, 4)
    gm = dynamo_graph(Pair(nn.GELU(approximate="tanh")), x)
    pattern_none = reference._pattern_none
    assert len(replace_pattern_with_filters(gm, pattern_none, _fused_none)) == 0
    assert len(replace_pattern_with_filters(gm, pattern_none, _fused_none, ignore_literals=True)) == 1
    fused_node, = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert fused_node.args[3] == "none"  # the tanh GELU is now computed exactly: other numbers


@pytest.mark.parametrize("kind", ["residual", "returned", "read_before"])
def test_the_matcher_refuses_a_pair_whose_linear_output_is_read_elsewhere(kind):
    gm = dynamo_graph(probes.SharedOutput(kind), torch.randn(2, 4))
    assert len(replace_pattern(gm, _pattern_no_keyword, _fused_none)) == 0


def test_the_replacement_goes_before_the_first_reader_past_the_end_of_a_no_grad_block():
    """README 'Where the rewriter puts the new node': inside no_grad, the fused op lands after
    _set_grad_enabled(True)."""
    gm = dynamo_graph(probes.GradModes("frozen_pair"), torch.randn(2, 4))
    assert len(replace_pattern(gm, _pattern_no_keyword, _fused_none)) == 1
    order = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    switches = [i for i, t in enumerate(order) if "set_grad_enabled" in t]
    fused_at = next(i for i, t in enumerate(order) if "linear_gelu" in t)
    assert len(switches) == 2 and fused_at > switches[1]


def _grads_after(pass_, recipe: str) -> tuple[dict, dict]:
    model, x = probes.build(recipe)
    graphs = []
    compiled = torch.compile(model, backend=lambda gm, ex: graphs.append(gm) or (lambda *a: gm(*a)), fullgraph=True)
    x = x.requires_grad_()
    compiled(x)
    pass_(graphs[0])
    fused = probes._run_and_backward(model, compiled, x)["grads"]
    return fused, probes.eager_run(recipe, x)["grads"]


@pytest.mark.parametrize("recipe", ["grad frozen_pair", "grad frozen_linear"])
def test_without_the_filter_a_frozen_linear_receives_gradients(recipe):
    fused, eager = _grads_after(lambda gm: replace_pattern(gm, _pattern_no_keyword, _fused_none), recipe)
    assert eager["fc.weight"] is None and fused["fc.weight"] is not None


def test_kata3s_pass_fuses_at_the_gelu_right_inside_a_block_and_wrong_across_its_edge():
    """README's comparison table: kata 3 inserts where the GELU was. frozen_pair: right; frozen_linear: the fused op
    runs with grad on although the Linear ran under no_grad."""
    fused, eager = _grads_after(kata3.fuse_linear_gelu, "grad frozen_pair")
    assert eager["fc.weight"] is None and fused["fc.weight"] is None
    fused, eager = _grads_after(kata3.fuse_linear_gelu, "grad frozen_linear")
    assert eager["fc.weight"] is None and fused["fc.weight"] is not None


# --- Step 6: training -------------------------------------------------------------------------------------------

def test_after_aot_autograds_split_the_forward_graph_returns_the_pre_gelu_value():
    """README 'Step 6': fusing inside fw_compiler finds nothing; the product is an output of the forward graph."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    forward_graphs = []

    def keep(gm, _):
        forward_graphs.append(gm)
        return make_boxed_func(gm.forward)

    model = nn.Sequential(nn.Linear(4, 5), nn.GELU())
    torch.compile(model, backend=aot_autograd(fw_compiler=keep, bw_compiler=make_boxed_func), fullgraph=True)(
        torch.randn(2, 4))
    gm = forward_graphs[0]
    addmm, = [n for n in gm.graph.nodes if n.target == torch.ops.aten.addmm.default]
    output, = [n for n in gm.graph.nodes if n.op == "output"]
    assert output in addmm.users and kata3.fuse_linear_gelu(gm) == 0


def test_fusing_before_the_split_puts_the_fused_op_in_both_graphs():
    seen = probes.train(reference, "pair F.gelu(z)", [[2, 3]])
    assert seen["forward"]["fused"] == 1 and seen["backward"]["fused_backward"] == 1
    assert seen["forward"]["aten.gelu"] == 0


# --- blind round 2: strides, vjp, fake kernels of undeclared writes, what counts as a write --------------------

def test_f_linear_takes_a_transposed_x_and_view_does_not():
    """README 'Step 1': any strides; flatten with reshape, never view."""
    x = torch.randn(3, 2, 4).transpose(0, 1)
    assert F.linear(x, torch.randn(5, 4)).shape == (2, 3, 5) and x.reshape(-1, 4).shape == (6, 4)
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size and stride"):
        x.view(-1, 4)


@torch.library.custom_op("kata7facts::gelu_grad_by_vjp", mutates_args=())
def gelu_grad_by_vjp(grad: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    return torch.func.vjp(F.gelu, z)[1](grad)[0]


def test_vjp_inside_a_kernel_runs_eagerly_and_fails_under_a_dispatch_mode():
    """README 'Step 3': torch.func.vjp in a kernel fails as soon as a TorchDispatchMode is active."""
    z, grad = torch.randn(3), torch.randn(3)
    leaf = z.clone().requires_grad_()
    torch.testing.assert_close(gelu_grad_by_vjp(grad, z), torch.autograd.grad(F.gelu(leaf), leaf, grad)[0])
    with pytest.raises(Exception, match="storage"):
        with probes.OpRecorder():
            gelu_grad_by_vjp(grad, z)


@torch.library.custom_op("kata7facts::write_undeclared_no_fake", mutates_args=())
def write_undeclared_no_fake(x: torch.Tensor, out: torch.Tensor) -> None:
    out.copy_(x * 2)


@torch.library.custom_op("kata7facts::write_declared_no_fake", mutates_args=("out",))
def write_declared_no_fake(x: torch.Tensor, out: torch.Tensor) -> None:
    out.copy_(x * 2)


def test_custom_op_writes_the_fake_kernel_of_a_declared_write_only():
    """README 'Step 4': declared, custom_op generates the fake kernel; undeclared, torch.compile stops at the op."""
    def into_buffer(op):
        def run(x):
            out = torch.zeros(3)
            op(x, out)
            return out + 0
        return run

    compiled = torch.compile(into_buffer(write_declared_no_fake), backend="aot_eager", fullgraph=True)
    assert torch.equal(compiled(torch.ones(3)), torch.full((3,), 2.0))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="no fake impl registered"):
        torch.compile(into_buffer(write_undeclared_no_fake), backend="aot_eager", fullgraph=True)(torch.ones(3))


def test_dynamo_writes_nn_relu_as_relu_inplace_false_and_keeps_writes_through_views():
    """README 'In-place writes': nn.ReLU() is relu(t, inplace=False); t[0].mul_ writes through a getitem view."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.act = nn.ReLU()

        def forward(self, x):
            t = x * 1
            r = self.act(t)
            t[0].mul_(0.5)
            return r + t

    found = calls(dynamo_graph(M(), torch.randn(2, 3)))
    assert any(name == "relu" and kwargs == {"inplace": False} for name, _, kwargs in found)
    gm = dynamo_graph(M(), torch.randn(2, 3))
    write = next(n for n in gm.graph.nodes if n.op == "call_method" and n.target == "mul_")
    assert write.args[0].target.__name__ == "getitem"


@pytest.mark.parametrize("write", ["b.add_(1.0)", "w.mul_(0.5)", "t[0].mul_(0.5)"])
def test_a_write_into_any_input_or_a_view_of_one_changes_the_output_of_a_pair_fused_past_it(write):
    """README 'In-place writes': the weight and the bias are inputs like x, and a view writes into its input."""
    layout = ("layout", (("linear", True), ("gelu", True), (write, True), ("reader", True)), "F.gelu(z)", 0)
    model, x = probes.build(layout)
    gm, _, compiled, graphs = probes._dynamo_graph(model, x)
    assert len(replace_pattern(gm, _pattern_no_keyword, _fused_none)) == 1
    fused = probes._run_and_backward(model, compiled, x)["outputs"][0]
    assert len(graphs) == 1
    assert not torch.allclose(fused, probes.eager_run(layout, x)["outputs"][0])


@pytest.mark.parametrize("written, frozen", [("bias", ""), ("x", "weight"), ("weight", "x")])
def test_a_later_write_into_an_input_the_fused_op_saved_breaks_its_backward_and_not_eagers(written, frozen):
    """Step 5's rule for training graphs: the fused op saves x, weight and bias for its backward; eager's Linear
    saves x only for the weight's gradient, the weight only for x's, and never the bias. So a write after the pair
    into the bias (or into x when the weight is frozen, into the weight when x needs no gradient) breaks the fused
    backward only; under no_grad nothing is saved and nothing breaks."""
    torch.manual_seed(0)

    def step(fused: bool, grad: bool = True) -> None:
        leaves = {"x": torch.randn(2, 4), "weight": torch.randn(5, 4), "bias": torch.randn(5)}
        for name, leaf in leaves.items():
            leaf.requires_grad_(name != frozen)
        with torch.set_grad_enabled(grad):
            x, weight, bias = (leaves[k] * 1 for k in ("x", "weight", "bias"))
            h = torch.ops.npu.linear_gelu(x, weight, bias) if fused else F.gelu(F.linear(x, weight, bias))
            {"x": x, "weight": weight, "bias": bias}[written].mul_(0.5)
        if grad:
            h.sum().backward()

    step(fused=False)
    step(fused=True, grad=False)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        step(fused=True)


@pytest.mark.parametrize("write", ["s.mul_(0.5)", "s[:, 0].mul_(0.5)", "s.view(-1)[:12].add_(1.0)"])
def test_a_write_into_the_tensor_an_input_views_changes_the_input(write):
    """README 'What counts as a write into an input': with `t = s[0]`, a write into `s`, into another view of it or
    through a chain from it writes into `t`, so a pair of `t` fused past it reads other values."""
    torch.manual_seed(0)
    fc = torch.nn.Linear(4, 5).requires_grad_(False)
    x = torch.randn(2, 3, 4)

    def run(fused_after_the_write: bool):
        s = torch.stack((x, x))
        t = s[0]
        if not fused_after_the_write:
            h = torch.nn.functional.gelu(fc(t))
        eval(write, {"s": s})
        if fused_after_the_write:
            h = torch.nn.functional.gelu(fc(t))
        return h

    assert not torch.allclose(run(False), run(True))


def test_a_write_into_a_part_of_the_base_the_input_does_not_hold_still_breaks_a_saved_input():
    """README: a write into `s[1]`, which holds none of `t = s[0]`'s elements, still counts for a pair autograd
    records: the version counter is the storage's, so a backward that saved `t` refuses to run."""
    x = torch.randn(2, 3, 4, requires_grad=True)
    s = torch.stack((x, x))
    t = s[0]
    version = t._version
    y = (t * t).sum()  # mul saves t
    s[1].mul_(2.0)
    assert t._version != version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_dynamo_records_w_T_as_getattr_and_an_in_place_result_is_the_tensor_it_wrote():
    """README 'In-place writes' (blind round 6): `w.T` is getattr(w, "T"), a view; `a = t.mul_(1.0)` is t, so a
    later write into a writes into t, and Dynamo's example values share one storage."""
    from torch.multiprocessing.reductions import StorageWeakRef

    def f(x):
        t = x * 1
        a = t.mul_(1.0)
        a.add_(1.0)
        return t, x.T * 2

    gm = dynamo_graph(f, torch.randn(3, 4))
    found = calls(gm)
    assert any(name == "getattr" and args[1:] == ("T",) for name, args, _ in found)
    t = next(n for n in gm.graph.nodes if n.op == "call_function" and getattr(n.target, "__name__", "") == "mul")
    alias = next(n for n in gm.graph.nodes if n.op == "call_method" and n.target == "mul_")
    assert alias.args[0] is t
    assert StorageWeakRef(t.meta["example_value"].untyped_storage()) == StorageWeakRef(
        alias.meta["example_value"].untyped_storage())
    out, _ = f(torch.zeros(3, 4))
    assert torch.equal(out, torch.ones(3, 4))


def test_a_graph_captured_under_no_grad_starts_with_grad_off_and_no_switch_says_so():
    """README 'Where the rewriter puts the new node' (blind round 6): Dynamo writes a switch only where the mode
    changes, so a model called under torch.no_grad() has none before its first node; an enable_grad block inside
    it shows as _set_grad_enabled(True) and, after it, (False)."""
    def f(x):
        z = x * 2
        with torch.enable_grad():
            h = z.sin()
        return h + 1

    graphs = []
    with torch.no_grad():
        torch.compile(f, backend=lambda gm, _: graphs.append(gm) or gm.forward, fullgraph=True)(torch.randn(3))
    switches = [n.args[0] for n in graphs[0].graph.nodes if n.target is torch._C._set_grad_enabled]
    first_op = next(n for n in graphs[0].graph.nodes if n.op == "call_function")
    assert switches == [True, False]
    assert first_op.target is not torch._C._set_grad_enabled
