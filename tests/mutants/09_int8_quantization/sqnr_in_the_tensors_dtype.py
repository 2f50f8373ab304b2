"""Mistake: sqnr computes the powers in the tensors' own dtype. In float16, 300 squared overflows to inf (the SQNR
comes out inf or nan), and bfloat16 sums of squares keep 8 bits: compute in float64."""

import torch

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('sqnr_is_signal_over_noise_in_decibels',)


def sqnr(reference, actual):
    noise = (reference - actual).pow(2).sum()
    if noise == 0:
        return float("inf")
    return float(10 * torch.log10(reference.pow(2).sum() / noise))


_ref.sqnr = sqnr

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
