"""Mistake: PSNR, not SQNR: the peak value squared over the mean squared error, which ignores how much signal the
reference carries."""

import math

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('layer_sensitivity_quantizes_each_layer_alone', 'quantize_with_sensitivity_reaches_the_bar',
    'sqnr_is_signal_over_noise_in_decibels')


def sqnr(reference, actual):
    mse = float((reference.double() - actual.double()).pow(2).mean())
    return math.inf if mse == 0 else 10 * math.log10(float(reference.abs().max()) ** 2 / mse)


_ref.sqnr = sqnr

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
