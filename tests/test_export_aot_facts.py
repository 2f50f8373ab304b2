"""What kata 8's lesson states about torch.export on torch 2.13.0, measured: if torch changes, a test here fails
before the lesson misleads anyone. Each test names the lesson section it backs."""
from __future__ import annotations

import sys

import pytest
import torch
import torch.nn as nn
from torch.export import Dim

from checker.core.manifest import get_kata
from checker.core.modules import load_module

pytestmark = pytest.mark.usefixtures("fresh_dynamo")
aten = torch.ops.aten
# the table the lesson specifies (torch's default minus the ops in NPU_OPS), as the kata's checks build it
npu_table = load_module(get_kata(8).checks_path.parent / "probes.py", "kata08_probes_for_facts").spec_table


def exported(model: nn.Module, x: torch.Tensor, table=None) -> torch.export.ExportedProgram:
    ep = torch.export.export(model.eval(), (x,), dynamic_shapes=({0: Dim("batch")},))
    return ep if table is None else ep.run_decompositions(table)


def targets(ep) -> list[str]:
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


class Lambda(nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def test_what_an_exported_program_is_weights_are_named_placeholders_and_cond_is_a_higher_order_op():
    class WithBuffer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(4, 4)
            self.register_buffer("scale", torch.ones(4))

        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda t: self.fc1(t) * self.scale, lambda t: t.clone(), (x,))

    ep = exported(WithBuffer(), torch.randn(3, 4))
    placeholders = [n.name for n in ep.graph.nodes if n.op == "placeholder"]
    assert placeholders == ["p_fc1_weight", "p_fc1_bias", "b_scale", "x"]
    assert ep.graph_signature.inputs_to_parameters == {"p_fc1_weight": "fc1.weight", "p_fc1_bias": "fc1.bias"}
    assert "torch.ops.higher_order.cond" in ep.graph_module.code


def test_step_1_a_static_export_refuses_another_batch_and_a_dim_keeps_it_symbolic():
    model, x = nn.Linear(4, 3), torch.randn(3, 4)
    static = torch.export.export(model, (x,))
    with pytest.raises(AssertionError, match=r"Guard failed: .*size\(\)\[0\] == 3"):
        static.module()(torch.randn(5, 4))
    dynamic = exported(model, x)
    (symbol,) = dynamic.range_constraints
    user = next(n for n in dynamic.graph.nodes if n.name == dynamic.graph_signature.user_inputs[0])
    assert str(user.meta["val"].shape[0]) == str(symbol)
    assert dynamic.module()(torch.randn(5, 4)).shape == (5, 3)


def test_step_1_the_default_table_decomposes_linear_and_silu_keeps_gelu_and_an_empty_one_keeps_layer_norm():
    table = torch.export.default_decompositions()
    assert aten.linear.default in table and aten.silu.default in table and aten.gelu.default not in table
    assert torch.Tag.core in aten.gelu.default.tags and torch.Tag.core not in aten.silu.default.tags
    model = nn.Sequential(nn.Linear(4, 8), nn.SiLU(), nn.LayerNorm(8), nn.Linear(8, 3))
    default = targets(exported(model, torch.randn(3, 4), torch.export.default_decompositions()))
    assert "aten.linear.default" not in default and "aten.addmm.default" in default and "aten.permute.default" in default
    assert "aten.silu.default" not in default and {"aten.sigmoid.default", "aten.mul.Tensor"} <= set(default)
    assert "aten.layer_norm.default" in targets(exported(model, torch.randn(3, 4), {}))
    kept = targets(exported(model, torch.randn(3, 4), npu_table()))
    assert kept.count("aten.linear.default") == 2 and "aten.silu.default" in kept
    assert "aten.native_layer_norm.default" in kept and "aten.layer_norm.default" not in kept


@pytest.mark.parametrize("fn, shape, expected", [
    (lambda h: h.detach() * 2, (3, 4), ["aten.alias.default"]),
    (lambda h: h.clone() * 2, (3, 4), ["aten.clone.default"]),
    (lambda h: h[:, None] * 2, (3, 4), ["aten.slice.Tensor", "aten.unsqueeze.default"]),
    (lambda h: h.unsqueeze(1).squeeze(1) * 2, (3, 4), ["aten.unsqueeze.default", "aten.squeeze.dims"]),
    (lambda h: h.flatten(1) * 2, (3, 2, 2), ["aten.sym_size.int", "aten.view.default"]),
    (lambda h: h.double() * 2, (3, 4), ["aten._assert_tensor_metadata.default", "aten._to_copy.default"]),
], ids=["detach", "clone", "none_index", "squeeze", "flatten", "double"])
def test_step_2_what_export_writes_for_aliases_views_and_casts(fn, shape, expected):
    ops = targets(exported(Lambda(fn), torch.randn(*shape), npu_table()))
    assert ops == expected + ["aten.mul.Tensor"]


def test_step_2_a_full_slice_ends_at_sys_maxsize_a_static_full_one_is_dropped_and_flatten_sizes_its_view():
    sliced = exported(Lambda(lambda h: h[:, None]), torch.randn(3, 4), npu_table())
    (slice_node,) = [n for n in sliced.graph.nodes if n.target is aten.slice.Tensor]
    assert list(slice_node.args[1:]) == [0, 0, 9223372036854775807] and slice_node.args[3] == sys.maxsize
    static_end = exported(Lambda(lambda h: h[:, :4] * 2), torch.randn(3, 4), npu_table())
    assert [n.args[1] for n in static_end.graph.nodes if n.target is aten.slice.Tensor] == [0], "export drops [:, :4]"
    flat = exported(Lambda(lambda h: h.flatten(1)), torch.randn(3, 2, 2), npu_table())
    (view,) = [n for n in flat.graph.nodes if n.target is aten.view.default]
    assert view.args[1][0].target is aten.sym_size.int and view.args[1][1] == 4


def test_step_1_a_dims_min_of_2_still_runs_batch_1_a_min_of_3_and_a_max_are_guarded():
    model, x = nn.Linear(4, 3), torch.randn(3, 4)

    def with_dim(**bounds) -> torch.nn.Module:
        return torch.export.export(model, (x,), dynamic_shapes=({0: Dim("b", **bounds)},)).module()

    assert with_dim(min=2)(torch.randn(1, 4)).shape == (1, 3)
    ranges = {what: [(r.lower, str(r.upper)) for r in torch.export.export(
        model, (x,), dynamic_shapes=({0: dim},)).range_constraints.values()]
        for what, dim in (("named", Dim("b")), ("dynamic", Dim.DYNAMIC), ("min 2", Dim("b", min=2)))}
    assert ranges == {"named": [(0, "int_oo")], "dynamic": [(2, "int_oo")], "min 2": [(2, "int_oo")]}
    assert torch.export.export(model, (x,), dynamic_shapes=({0: Dim.DYNAMIC},)).module()(torch.randn(1, 4)).shape == (1, 3)
    with pytest.raises(AssertionError, match=r"Guard failed"):
        with_dim(min=3)(torch.randn(2, 4))
    with pytest.raises(AssertionError, match=r"Guard failed: .*<= 4"):
        with_dim(max=4)(torch.randn(5, 4))


def test_step_2_a_numeric_end_on_the_batch_is_kept_and_needs_a_batch_that_long():
    with pytest.raises(Exception, match=r"3 <= "):
        torch.export.export(Lambda(lambda h: h[:3].relu()), (torch.randn(3, 4),), dynamic_shapes=({0: Dim("b")},))
    ep = torch.export.export(Lambda(lambda h: h[:3].relu()), (torch.randn(3, 4),),
                             dynamic_shapes=({0: Dim("b", min=3)},))
    (slice_node,) = [n for n in ep.graph.nodes if n.target is aten.slice.Tensor]
    assert list(slice_node.args[1:]) == [0, 0, 3]
    assert ep.module()(torch.randn(7, 4)).shape == (3, 4)
    # Dim.DYNAMIC takes the slice's bound silently: at least 3, so batch 1 is refused when the program runs
    ep = torch.export.export(Lambda(lambda h: h[:3].relu()), (torch.randn(3, 4),),
                             dynamic_shapes=({0: Dim.DYNAMIC},))
    (bounds,) = ep.range_constraints.values()
    assert (bounds.lower, str(bounds.upper)) == (3, "int_oo")
    with pytest.raises(Exception, match=r"size\(\)\[0\] >= 3"):
        ep.module()(torch.randn(1, 4))


def test_step_2_a_size_computed_from_the_batch_is_symbolic_flatten_0_1_views_to_2_s_by_4():
    ep = exported(Lambda(lambda h: h.flatten(0, 1).relu()), torch.randn(3, 2, 4), npu_table())
    (view,) = [n for n in ep.graph.nodes if n.target is aten.view.default]
    rows = view.meta["val"].shape[0]
    # str() before any int(): int() of a SymInt specialises it to the example's value (what the lesson warns of)
    assert isinstance(rows, torch.SymInt) and str(rows).startswith("2*") and rows.node.hint == 6
    assert view.args[1][1] == 4 and isinstance(view.args[1][0], torch.fx.Node)


def _clone_targets(ep) -> list[tuple[str, object]]:
    return [(str(n.target), n.kwargs.get("memory_format", n.kwargs.get("dtype")))
            for n in ep.graph.nodes if n.target in (aten.clone.default, aten._to_copy.default)]


def _runs_without_its_clone(ep, x: torch.Tensor) -> bool:
    """Erase the program's one clone (its readers read the clone's input) and run the graph on x."""
    gm = ep.graph_module
    (clone,) = [n for n in gm.graph.nodes if n.target is aten.clone.default]
    clone.replace_all_uses_with(clone.args[0])
    gm.graph.erase_node(clone)
    gm.recompile()
    try:
        gm(*ep.state_dict.values(), x)
    except RuntimeError as error:
        assert "view size is not compatible with input tensor's size and stride" in str(error)
        return False
    return True


def test_step_2_clones_by_memory_format_and_a_copy_that_changes_nothing():
    plain = exported(Lambda(lambda h: h.clone(memory_format=torch.preserve_format) * 2), torch.randn(3, 4), npu_table())
    assert _clone_targets(plain) == [("aten.clone.default", torch.preserve_format)]
    copy = exported(Lambda(lambda h: h.to(torch.float32, copy=True) * 2), torch.randn(3, 4), npu_table())
    (to_copy,) = [n for n in copy.graph.nodes if n.target is aten._to_copy.default]
    assert to_copy.kwargs == {"dtype": torch.float32}, "the copy names no memory format"
    val, source = to_copy.meta["val"], to_copy.args[0].meta["val"]
    assert (val.dtype, val.layout, val.device) == (source.dtype, source.layout, source.device)
    for fn, fmt in ((lambda h: h.transpose(1, 2).reshape(h.shape[0], 4, -1), torch.contiguous_format),
                    (lambda h: h.transpose(2, 3).contiguous(memory_format=torch.channels_last).view(h.shape[0], 2, -1),
                     torch.channels_last)):
        ep = exported(Lambda(fn), torch.randn(3, 2, 4, 5), npu_table())
        assert _clone_targets(ep) == [("aten.clone.default", fmt)]
        assert [str(n.target) for n in ep.graph.nodes if n.op == "call_function"][-1] == "aten.view.default"
        assert not _runs_without_its_clone(ep, torch.randn(3, 2, 4, 5)), f"the view needs the {fmt} clone"


def test_step_3_operator_support_calls_placeholders_supported():
    from torch.fx.passes.operator_support import OperatorSupport

    ep = exported(nn.Linear(4, 3), torch.randn(3, 4))
    placeholder = next(n for n in ep.graph.nodes if n.op == "placeholder")
    assert OperatorSupport().is_node_supported({}, placeholder) is True


def _linear_support():
    from torch.fx.passes.operator_support import OperatorSupport

    class LinearOnly(OperatorSupport):
        def is_node_supported(self, submodules, node) -> bool:
            return node.op == "call_function" and node.target is aten.linear.default

    return LinearOnly()


def test_step_4_the_partitioner_drops_a_lone_node_by_default_and_renames_a_placeholder_called_input():
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

    model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 3))
    ep = exported(model, torch.randn(3, 4), npu_table())
    assert ep.graph_signature.user_inputs == ("input",)
    assert CapabilityBasedPartitioner(ep.graph_module, _linear_support()).propose_partitions() == []
    partitioner = CapabilityBasedPartitioner(ep.graph_module, _linear_support(), allows_single_node_partition=True)
    graph_before = ep.graph_module.graph
    fused = partitioner.fuse_partitions(partitioner.propose_partitions())
    assert fused is ep.graph_module
    assert fused.graph is not graph_before, "the same gm, a new Graph: a graph kept from before the fuse is dead"
    assert [n.name for n in fused.graph.nodes if n.op == "placeholder"][-1] == "input_1"
    assert ep.graph_signature.user_inputs == ("input",)


def test_step_4_save_refuses_a_delegated_program_whose_signature_names_the_old_nodes(tmp_path):
    from checker.kit import load_reference

    reference = load_reference("08_export_aot", "aot.py")
    reference._sync_signature = lambda ep: None
    ep = reference.lower(nn.Sequential(nn.Linear(4, 8), nn.GELU()), (torch.randn(3, 4),))
    with pytest.raises(Exception, match="Input spec name input does not match node name input_1"):
        torch.export.save(ep, tmp_path / "p.pt2")


def test_step_5_a_delegated_program_saves_and_loads_and_an_op_registered_elsewhere_does_not(tmp_path):
    import subprocess
    import sys

    from checker.core.manifest import REPO_ROOT
    from checker.kit import load_reference

    reference = load_reference("08_export_aot", "aot.py")
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 3)).eval()
    ep = reference.lower(model, (torch.randn(3, 4),))
    torch.export.save(ep, tmp_path / "ok.pt2")

    @torch.library.custom_op("facts_elsewhere::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    twice.register_fake(lambda x: torch.empty_like(x))
    foreign = torch.export.export(Lambda(lambda h: torch.ops.facts_elsewhere.twice(h)), (torch.randn(3, 4),))
    torch.export.save(foreign, tmp_path / "foreign.pt2")
    code = ("import torch, katas.common.npu.aot, sys\n"
            "print(torch.export.load(sys.argv[1]).module()(torch.ones(5, 4)).shape)\n"
            "try:\n    torch.export.load(sys.argv[2])\nexcept Exception as e:\n    print('refused', type(e).__name__)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "ok.pt2"), str(tmp_path / "foreign.pt2")],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert proc.stdout.split("\n")[:2] == ["torch.Size([5, 3])", "refused RuntimeError"], proc.stderr[-1500:]
