"""Mistake: lower_to_npu_int8 lowers a deep copy and returns it, leaving the module it was given unlowered; the
lesson's contract is to lower that module in place and return it (blind round 2, wrong_copy_not_inplace)."""

import copy

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('add_of_two_scales_stays_float', 'every_int8_pattern_becomes_one_int8_op',
    'every_linear_and_add_runs_int8_on_the_npu', 'lowering_reads_each_number_from_its_own_node',
    'patterns_of_other_kinds_stay_float', 'random_mlps_run_int8_on_the_npu',
    'weights_the_int8_linear_cannot_read_stay_float')

_lower = _ref.lower_to_npu_int8


def lower_to_npu_int8(converted):
    return _lower(copy.deepcopy(converted))


_ref.lower_to_npu_int8 = lower_to_npu_int8

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
