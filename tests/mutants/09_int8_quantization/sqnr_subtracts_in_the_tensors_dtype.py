"""Mistake: sqnr subtracts in the tensors' own dtype and converts only the difference to float64 before squaring.
Near the top of float16 (or bfloat16, or float32) the difference of two values of opposite sign overflows:
float16 [60000] against [-60000] gives -inf, not -6.02 dB (blind round 3, wrong_sqnr_subtract_native). Lesson:
convert both tensors to float64 first, then subtract and square."""

import torch

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('sqnr_is_signal_over_noise_in_decibels',)


def sqnr(reference, actual):
    noise = (reference - actual).double().pow(2).sum()
    if noise == 0:
        return float("inf")
    return float(10 * torch.log10(reference.double().pow(2).sum() / noise))


_ref.sqnr = sqnr

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
