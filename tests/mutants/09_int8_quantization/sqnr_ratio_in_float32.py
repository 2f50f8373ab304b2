"""Mistake: the powers are summed in float64, but their ratio is taken to float32 before the log10, as an ordinary
number. Float32 ends at 3.4e38, so every SQNR above 385 dB comes out inf, and a ratio under 1.4e-45 (below
-448 dB) comes out -inf (blind round 4, wrong_sqnr_ratio_float32: float64 [1e20, 1.0] against [1e20, 1.0 + 2.2e-16]
is 713 dB, not inf). Lesson: "Keep every step in float64, the power ratio and its log10 too"."""

import torch

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('sqnr_is_signal_over_noise_in_decibels',)


def sqnr(reference, actual):
    reference, actual = reference.double(), actual.double()
    noise, signal = (reference - actual).pow(2).sum(), reference.pow(2).sum()
    if noise == 0:
        return float("inf")
    return float(10 * torch.log10((signal / noise).float()))


_ref.sqnr = sqnr

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
