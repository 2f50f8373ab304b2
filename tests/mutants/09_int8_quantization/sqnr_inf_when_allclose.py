"""Mistake: sqnr calls tensors equal when torch.allclose does and returns inf. Near-equal tensors still have
noise: ones(100) against ones(100) + 1e-6 is 120.4 dB, not inf."""

import torch

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('sqnr_is_signal_over_noise_in_decibels',)

_sqnr = _ref.sqnr


def sqnr(reference, actual):
    if torch.allclose(reference.double(), actual.double()):
        return float("inf")
    return _sqnr(reference, actual)


_ref.sqnr = sqnr

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
