"""Mistake: the lowering erases the pattern's quantize and float op but leaves the dequantize nodes that fed it:
nothing reads them, yet each still runs on the CPU on every call (blind round 2, wrong_dead_dq)."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('every_int8_pattern_becomes_one_int8_op', 'every_linear_and_add_runs_int8_on_the_npu',
    'random_mlps_run_int8_on_the_npu')

_replace = _ref._replace


def _replace_keeping_dequantizes(gm, q_out, target, args, dead):
    kept = (_ref.DEQUANTIZE_PER_TENSOR, _ref.DEQUANTIZE_PER_CHANNEL)
    _replace(gm, q_out, target, args, dead=[n for n in dead if n.target not in kept])


_ref._replace = _replace_keeping_dequantizes

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
