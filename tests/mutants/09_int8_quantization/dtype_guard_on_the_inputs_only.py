"""Mistake: the dtype guard looks at the dequantize nodes feeding a pattern only, not at the quantize ending it: a
pattern whose output is quantized to uint8 is lowered, and the int8 op writes int8 codes where the graph reads
uint8 (blind round 2, wrong_dtype_input_only)."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('patterns_of_other_kinds_stay_float',)


def _quantized_output(node):
    q = _ref._only_user(node)
    if q is None or not _ref._calls(q, _ref.QUANTIZE_PER_TENSOR):
        return None
    return q


_ref._quantized_output = _quantized_output

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
