"""Mistake: PSNR, not SQNR: the peak value squared over the mean squared error, which ignores how much signal the
reference carries."""

import math

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('sqnr_is_signal_over_noise_in_decibels',)


def sqnr(reference, actual):
    mse = float((reference.double() - actual.double()).pow(2).mean())
    return math.inf if mse == 0 else 10 * math.log10(float(reference.abs().max()) ** 2 / mse)


_ref.sqnr = sqnr

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
