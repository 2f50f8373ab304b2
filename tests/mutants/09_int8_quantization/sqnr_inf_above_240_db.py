"""Mistake: sqnr returns inf once the noise power is below 1e-24 of the signal's (240 dB), as if noise that small
were no noise. Only exactly equal tensors have no noise: float64 ones(100) against it with one element + 1e-13 is
280 dB, not inf (blind round 3, wrong_sqnr_inf_below_resolution, at 140 dB). Lesson: "only exactly equal ones"."""

import torch

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('sqnr_is_signal_over_noise_in_decibels',)


def sqnr(reference, actual):
    reference, actual = reference.double(), actual.double()
    noise, signal = (reference - actual).pow(2).sum(), reference.pow(2).sum()
    if noise <= 1e-24 * signal:
        return float("inf")
    return float(10 * torch.log10(signal / noise))


_ref.sqnr = sqnr

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
