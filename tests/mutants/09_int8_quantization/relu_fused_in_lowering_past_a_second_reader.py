"""Mistake: the lowering fuses a relu into its linear's int8 op without the single-user guard. On a graph where the
linear has a second reader, the int8 linear applies the relu, and the float linear stays for the other reader: the
linear is computed twice, once on the device and once on the CPU."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('patterns_of_other_kinds_stay_float',)

_guarded = _ref._fusable_relu
_lower = _ref.lower_to_npu_int8


def _any_relu(linear):
    return next((u for u in linear.users if _ref._calls_any(u, _ref.RELUS)), None)


def lower_to_npu_int8(converted):
    _ref._fusable_relu = _any_relu  # the lowering only: the Quantizer keeps the guard
    try:
        return _lower(converted)
    finally:
        _ref._fusable_relu = _guarded


_ref.lower_to_npu_int8 = lower_to_npu_int8

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
