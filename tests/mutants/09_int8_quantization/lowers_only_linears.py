"""Mistake: the lowering matches linears only: every add, even one with a single scale, stays float on the CPU."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('every_int8_pattern_becomes_one_int8_op', 'every_linear_and_add_runs_int8_on_the_npu',
    'kept_float_layers_stay_float_and_the_rest_run_int8', 'patterns_of_other_kinds_stay_float',
    'quantize_with_sensitivity_reaches_the_bar', 'random_mlps_run_int8_on_the_npu')

_ref._lower_add = lambda gm, add: None

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
