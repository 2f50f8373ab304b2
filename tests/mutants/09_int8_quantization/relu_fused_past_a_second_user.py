"""Mistake: a relu rides on its linear even when the linear's output is read elsewhere too (kata 3's single-user
guard forgotten): the linear's own output goes unquantized."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('every_int8_pattern_becomes_one_int8_op', 'every_linear_and_add_runs_int8_on_the_npu',
    'patterns_of_other_kinds_stay_float', 'quantizer_annotates_linears_and_adds', 'relu_rides_on_its_linear')


def _fusable_relu(linear):
    relus = [u for u in linear.users if _ref._calls(u, _ref.aten.relu.default)]
    return relus[0] if relus else None


_ref._fusable_relu = _fusable_relu

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
