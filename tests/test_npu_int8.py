"""The NPU's int8 mode (katas/common/npu/device.py: int8_linear_kernel, int8_add_kernel; katas/common/npu/int8.py:
the ops that run them on the device): integer arithmetic, saturation, the device's refusals, launches and program
reuse."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from katas.common import npu

from katas.common.npu import int8 as npu_int8
from katas.common.npu import NPUCompileError, int8_add_kernel, int8_linear_kernel
from katas.common.pt2e import DEQUANTIZE_PER_TENSOR, QUANTIZE_PER_TENSOR

LINEAR, ADD = torch.ops.kata.int8_linear.default, torch.ops.kata.int8_add.default


@pytest.fixture(autouse=True)
def empty_device():
    npu_int8.release_all()
    npu.DEVICE.release_all()
    npu.DEVICE.reset()
    yield
    npu_int8.release_all()
    npu.DEVICE.release_all()


def codes(*shape, seed=0, low=-128, high=128):
    return torch.randint(low, high, shape, generator=torch.Generator().manual_seed(seed), dtype=torch.int8)


def linear_case(seed=0, rows=3, inner=8, out=5):
    generator = torch.Generator().manual_seed(seed)
    x, w = codes(rows, inner, seed=seed), codes(out, inner, seed=seed + 1, low=-127)
    w_scale = torch.rand(out, generator=generator) * 0.01 + 0.001
    bias = torch.randn(out, generator=generator)
    return x, 0.05, 3, w, w_scale, bias


def float_linear_then_quantize(x, x_scale, x_zp, w, w_scale, bias, out_scale, out_zp, relu=False):
    """What the quantize/dequantize graph computes: dequantize, float linear, quantize (the bias not rounded)."""
    y = F.linear((x.double() - x_zp) * x_scale, w.double() * w_scale.double()[:, None], bias.double())
    if relu:
        y = y.relu()
    return torch.clamp(torch.round(y / out_scale) + out_zp, -128, 127)


@pytest.mark.parametrize("relu", [False, True])
def test_int8_linear_is_the_dequantized_linear_requantized_to_within_one_code(relu):
    for seed in range(5):
        case = linear_case(seed)
        got = int8_linear_kernel(*case, out_scale=0.1, out_zero_point=-5, relu=relu)
        want = float_linear_then_quantize(*case, 0.1, -5, relu)
        assert got.dtype == torch.int8
        assert (got.double() - want).abs().max() <= 1
        if relu:
            assert got.min() >= -5  # the relu clamps at the output zero point


def test_int8_results_saturate_instead_of_wrapping():
    x, w = torch.full((1, 64), 127, dtype=torch.int8), torch.full((2, 64), 127, dtype=torch.int8)
    w[1] = -127
    got = int8_linear_kernel(x, 1.0, 0, w, torch.ones(2), None, 1.0, 0)
    assert got.tolist() == [[127, -128]]
    a = torch.tensor([100, -100], dtype=torch.int8)
    assert int8_add_kernel(a, a, 1.0, 0, 1.0, 0).tolist() == [127, -128]


def test_the_bias_is_rounded_to_int32_at_the_accumulator_scale():
    x, w = torch.zeros(1, 4, dtype=torch.int8), torch.ones(1, 4, dtype=torch.int8)
    # accumulator scale 0.5 * 0.25 = 0.125: a bias of 0.2 becomes round(1.6) = 2 codes, 0.25 in float
    got = int8_linear_kernel(x, 0.5, 0, w, torch.tensor([0.25]), torch.tensor([0.2]), 0.0625, 0)
    assert got.tolist() == [[4]]


def test_int8_add_reads_both_inputs_with_one_scale_and_zero_point():
    a, b = codes(4, 6, seed=1), codes(4, 6, seed=2)
    got = int8_add_kernel(a, b, 0.1, 4, 0.2, -3)
    # round, then add the zero point (as quantize_per_tensor does): ties go to even before the shift by -3
    want = torch.clamp(torch.round(((a.double() - 4) + (b.double() - 4)) * (0.1 / 0.2)) - 3, -128, 127)
    assert torch.equal(got.double(), want)


def test_the_ops_run_on_the_npu_one_launch_each_and_reuse_their_program():
    x, x_scale, x_zp, w, w_scale, bias = linear_case()
    y = npu_int8.int8_linear(x, x_scale, x_zp, w, w_scale, bias, 0.1, -5, True)
    npu_int8.int8_linear(x, x_scale, x_zp, w, w_scale, bias, 0.1, -5, True)
    npu_int8.int8_add(y, y, 0.1, -5, 0.2, 0)
    stats = npu.DEVICE.stats
    assert stats.ops_run == {"int8_linear": 2, "int8_add": 1}
    assert stats.launches == 3 and stats.programs_compiled == 2
    npu_int8.int8_linear(codes(7, 8), x_scale, x_zp, w, w_scale, bias, 0.1, -5, True)  # a new batch: a new program
    assert npu.DEVICE.stats.programs_compiled == 3


def test_a_program_released_from_device_memory_is_compiled_again():
    case = linear_case()
    npu_int8.int8_linear(*case, 0.1, 0, False)
    npu.DEVICE.release_all()
    npu_int8.int8_linear(*case, 0.1, 0, False)
    assert npu.DEVICE.stats.programs_compiled == 2 and npu.DEVICE.stats.runs == 2


def test_more_signatures_than_program_memory_holds_release_the_oldest():
    x, x_scale, x_zp, w, w_scale, bias = linear_case()
    for rows in range(1, npu.MAX_RESIDENT_PROGRAMS + 4):
        npu_int8.int8_linear(codes(rows, 8), x_scale, x_zp, w, w_scale, bias, 0.1, 0, False)
    assert npu.DEVICE.stats.programs_resident <= npu_int8.KEPT_PROGRAMS
    assert not npu.DEVICE.stats.compile_errors


@pytest.mark.parametrize("change, complaint", [
    (lambda c: (c[0].float(), *c[1:]), "x must be an int8 tensor"),
    (lambda c: (*c[:3], c[3].float(), *c[4:]), "weight must be an int8 tensor"),
    (lambda c: (*c[:4], torch.ones(2), c[5]), "one scale per output channel"),
    (lambda c: (codes(3, 7), *c[1:]), "do not chain"),
])
def test_the_device_refuses_what_its_int8_linear_cannot_compute_and_says_why(change, complaint):
    with pytest.raises(NPUCompileError, match=complaint):
        npu_int8.int8_linear(*change(linear_case()), 0.1, 0, False)


def test_int8_tensors_still_cannot_feed_a_float_kernel():
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(torch.ops.aten.relu.default, (x,)))
    with pytest.raises(NPUCompileError, match="int8; the NPU runs float32"):
        npu.NPU.compile(torch.fx.GraphModule(torch.nn.Module(), graph), [codes(2, 3)])


def test_the_fake_kernels_let_a_lowered_graph_be_exported_with_a_dynamic_batch():
    class Lowered(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            _, _, _, w, w_scale, bias = linear_case()
            self.register_buffer("w", w)
            self.register_buffer("w_scale", w_scale)
            self.register_buffer("bias", bias)

        def forward(self, x):
            x_q = QUANTIZE_PER_TENSOR(x, 0.05, 3, -128, 127, torch.int8)
            y = LINEAR(x_q, 0.05, 3, self.w, self.w_scale, self.bias, 0.1, 0, True)
            return DEQUANTIZE_PER_TENSOR(ADD(y, y, 0.1, 0, 0.2, 0), 0.2, 0, -128, 127, torch.int8)

    ep = torch.export.export(Lowered(), (torch.randn(4, 8),), dynamic_shapes=({0: torch.export.Dim("batch")},))
    assert {str(n.target) for n in ep.graph.nodes} >= {str(LINEAR), str(ADD)}
    assert ep.module()(torch.randn(9, 8)).shape == (9, 5)
    assert npu.DEVICE.stats.ops_run == {"int8_linear": 1, "int8_add": 1}
