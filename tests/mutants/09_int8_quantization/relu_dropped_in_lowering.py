"""Mistake: dq -> linear -> relu -> q is lowered as a plain int8 linear: the relu is erased, not applied."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('add_of_two_scales_stays_float', 'every_int8_pattern_becomes_one_int8_op',
    'every_linear_and_add_runs_int8_on_the_npu', 'kept_float_layers_stay_float_and_the_rest_run_int8',
    'patterns_of_other_kinds_stay_float')

_replace = _ref._replace


def _replace_without_relu(gm, q_out, target, args, dead):
    if target is _ref.INT8_LINEAR:
        args = (*args[:-1], False)
    _replace(gm, q_out, target, args, dead)


_ref._replace = _replace_without_relu

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
