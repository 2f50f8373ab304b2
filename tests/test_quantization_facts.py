"""What kata 9's lesson states about PT2E quantization on torch 2.13.0 with torchao 0.18.0, measured: if either
changes, a test here fails before the lesson misleads anyone. Each test names the lesson section it backs."""
from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn as nn

from checker.core.manifest import REPO_ROOT, get_kata
from checker.core.modules import load_module
from checker.kit import load_reference
from katas.common.pt2e import (
    DEQUANTIZE_PER_CHANNEL,
    DEQUANTIZE_PER_TENSOR,
    QUANTIZE_PER_TENSOR,
    MinMaxObserver,
    convert_pt2e,
    prepare_pt2e,
)

aten = torch.ops.aten
probes = load_module(get_kata(9).checks_path.parent / "probes.py", "kata09_probes_for_facts")


def converted(recipe: str, calibrate: bool = True, **quantizer) -> torch.fx.GraphModule:
    prepared = prepare_pt2e(probes.spec_exported(recipe), probes.SpecQuantizer(**quantizer))
    if calibrate:
        with torch.no_grad():
            for batch in probes.calibration(recipe):
                prepared(*batch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = convert_pt2e(prepared)
    result.caught = [str(w.message) for w in caught]
    return result


def calls(gm, target) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target is target]


def worst_sqnr(model_outputs: dict, recipe: str) -> float:
    return min(probes_sqnr(want, model_outputs[b]) for b, want in probes.eager(recipe).items())


def probes_sqnr(reference, actual) -> float:
    return float(10 * torch.log10(reference.pow(2).sum() / (reference - actual).pow(2).sum()))


def test_where_pt2e_lives_now_torch_lost_it_and_torchao_has_it():
    with pytest.raises(ModuleNotFoundError):
        import torch.ao.quantization.quantize_pt2e  # noqa: F401
    import torchao

    assert torchao.__version__ == "0.18.0"


def test_where_pt2e_lives_now_katas_common_pt2e_imports_without_a_word():
    done = subprocess.run([sys.executable, "-c", "import katas.common.pt2e"], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=120)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == "", done.stderr[-600:]


def test_step_1_export_leaves_linear_relu_and_add_whole_for_the_quantizer():
    targets = {n.target for n in probes.spec_exported("residual").graph.nodes}
    assert {aten.linear.default, aten.relu.default, aten.add.Tensor} <= targets


def test_quantization_in_one_screen_weights_are_int8_constants_and_each_user_gets_its_own_dequantize():
    gm = converted("residual")
    for dq in calls(gm, DEQUANTIZE_PER_CHANNEL):
        weight = torch.fx.graph_module._get_attr(gm, dq.args[0].target)
        assert dq.args[0].op == "get_attr" and weight.dtype == torch.int8 and dq.args[3] == 0
    # h = relu(fc1(x)) is read by fc2 and by the add: one quantize, two dequantize nodes
    shared = [q for q in calls(gm, QUANTIZE_PER_TENSOR) if len(q.users) == 2]
    assert shared and all(u.target is DEQUANTIZE_PER_TENSOR for u in shared[0].users)
    assert all(len(dq.users) == 1 for dq in calls(gm, DEQUANTIZE_PER_TENSOR) if dq.users)


def test_calibration_skipped_means_scale_one_zero_point_zero_and_a_warning():
    gm = converted("mlp", calibrate=False)
    assert any("must run observer before calling calculate_qparams" in text for text in gm.caught)
    assert {(q.args[1], q.args[2]) for q in calls(gm, QUANTIZE_PER_TENSOR)} == {(1.0, 0)}
    weights = [torch.fx.graph_module._get_attr(gm, dq.args[0].target) for dq in calls(gm, DEQUANTIZE_PER_CHANNEL)]
    assert all(not w.any() for w in weights), "every weight rounds to zero on a grid of whole numbers"
    outputs = probes.run(gm, "mlp")
    assert all(not out.any() for out in outputs.values()) and worst_sqnr(outputs, "mlp") == 0


def test_the_add_shared_specs_give_both_inputs_one_scale_separate_specs_do_not():
    def add_input_params(gm):
        add = calls(gm, aten.add.Tensor)[0]
        return [tuple(a.args[1:3]) for a in add.args[:2]]

    shared, apart = add_input_params(converted("residual")), add_input_params(converted("residual", share_add=False))
    assert shared[0] == shared[1]
    assert apart[0] != apart[1]


def test_per_channel_the_skewed_layer_keeps_36_db_per_channel_and_falls_under_10_per_tensor():
    reference = load_reference("09_int8_quantization", "int8.py")
    per_channel = reference.quantize_for_npu(probes.build("skewed"), probes.example("skewed"),
                                             probes.calibration("skewed"))
    per_tensor = reference.quantize_for_npu(probes.build("skewed"), probes.example("skewed"),
                                            probes.calibration("skewed"), per_channel=False)
    assert worst_sqnr(probes.run(per_channel, "skewed"), "skewed") > 30
    assert worst_sqnr(probes.run(per_tensor, "skewed"), "skewed") < 12


def test_patterns_quantizing_before_the_relu_spends_the_range_on_what_the_relu_drops():
    class ReluApart(probes.SpecQuantizer):
        def annotate(self, model):
            super().annotate(model)
            for node in model.graph.nodes:
                if node.target is aten.linear.default:
                    annotation = node.meta["quantization_annotation"]
                    annotation.output_qspec = probes._activation_spec()
            return model

    prepared = prepare_pt2e(probes.spec_exported("skewed"), ReluApart())
    with torch.no_grad():
        for batch in probes.calibration("skewed"):
            prepared(*batch)
    assert worst_sqnr(probes.run(convert_pt2e(prepared), "skewed"), "skewed") < 10


def test_step_3_the_lowered_graph_computes_what_the_quantized_graph_simulated():
    reference = load_reference("09_int8_quantization", "int8.py")
    for recipe in ("mlp", "residual", "gated"):
        want = probes.run(probes.spec_converted(recipe), recipe)
        got = probes.run(reference.lower_to_npu_int8(probes.spec_converted(recipe)), recipe)
        for batch in want:
            assert (got[batch] - want[batch]).abs().max() <= 0.05 * want[batch].abs().max()


def test_calibration_no_scale_below_float32_eps_so_tiny_values_dequantize_to_zero():
    tiny = torch.linspace(-1e-9, 1e-9, 21)
    for qscheme in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        observer = MinMaxObserver(dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=qscheme)
        observer(tiny)
        scale, zero_point = (float(v) for v in observer.calculate_qparams())
        assert scale == torch.finfo(torch.float32).eps
        codes = QUANTIZE_PER_TENSOR(tiny, scale, int(zero_point), -128, 127, torch.int8)
        back = DEQUANTIZE_PER_TENSOR(codes, scale, int(zero_point), -128, 127, torch.int8)
        assert not back.any(), "every value under half the smallest scale dequantizes to 0"
