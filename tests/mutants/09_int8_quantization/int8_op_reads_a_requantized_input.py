"""Mistake: the int8 op reads a fresh quantize of the dequantized input (with the dequantize's own scale and zero
point) instead of the int8 tensor the dequantize read: the same codes, after a dequantize and a quantize on the
CPU before every launch (blind round 2, wrong_requantize_input)."""

import torch

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('every_int8_pattern_becomes_one_int8_op', 'every_linear_and_add_runs_int8_on_the_npu',
    'random_mlps_run_int8_on_the_npu')

_replace = _ref._replace


def _requantized(gm, dq, before):
    _, scale, zero_point = dq.args[:3]
    with gm.graph.inserting_before(before):
        return gm.graph.call_function(_ref.QUANTIZE_PER_TENSOR, (dq, scale, zero_point, -128, 127, torch.int8))


def _replace_from_requantized(gm, q_out, target, args, dead):
    inputs = 2 if target is _ref.INT8_ADD else 1
    dequantizes = [n for n in dead if _ref._calls(n, _ref.DEQUANTIZE_PER_TENSOR)]
    args = list(args)
    for i in range(inputs):
        dq = next(d for d in dequantizes if d.args[0] is args[i])
        args[i] = _requantized(gm, dq, q_out)
    _replace(gm, q_out, target, tuple(args), dead=[n for n in dead if n not in dequantizes])


_ref._replace = _replace_from_requantized

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
