"""Mistake: a pattern's output (scale, zero point) is read from the dequantize after its quantize ("the numbers its
readers use"), not from the quantize that ends it. convert_pt2e writes the same numbers on both, so only a graph
whose dequantize carries other numbers shows that the int8 op then requantizes to the wrong grid."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('add_of_two_scales_stays_float', 'lowering_reads_each_number_from_its_own_node')

_replace = _ref._replace
_OUT = {_ref.INT8_LINEAR: 6, _ref.INT8_ADD: 4}  # where each op takes out_scale, out_zero_point


def _replace_reading_the_dequantize(gm, q_out, target, args, dead):
    readers = [u for u in q_out.users if _ref._calls(u, _ref.DEQUANTIZE_PER_TENSOR)]
    if readers:
        args = list(args)
        args[_OUT[target]:_OUT[target] + 2] = readers[0].args[1:3]
        args = tuple(args)
    _replace(gm, q_out, target, args, dead)


_ref._replace = _replace_reading_the_dequantize

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
