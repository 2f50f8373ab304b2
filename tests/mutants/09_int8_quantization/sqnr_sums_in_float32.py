"""Mistake: the differences and squares are float64, but the squares are summed in float32 (`.float().sum()`, to
save memory). Each square of 1e19 fits float32 (1e38 < 3.4e38); sixteen of them do not, and the sum is inf.
Lesson: "Keep every step in float64" (Step 4)."""

import torch

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('sqnr_is_signal_over_noise_in_decibels',)


def sqnr(reference, actual):
    reference, actual = reference.double(), actual.double()
    noise = (reference - actual).pow(2).float().sum().double()
    signal = reference.pow(2).float().sum().double()
    if noise == 0:
        return float("inf")
    return float(10 * torch.log10(signal / noise))


_ref.sqnr = sqnr

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
