"""Mistake: the lowering takes only weights quantized on [-127, 127] and leaves a symmetric weight on [-128, 127]
float, though the lesson allows that range and the int8 unit reads any int8 code (blind round 2,
wrong_refuse_full_range)."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('every_int8_pattern_becomes_one_int8_op',)

_symmetric_weight = _ref._symmetric_weight


def _narrow_symmetric_weight(gm, dq):
    if _ref._calls(dq, _ref.DEQUANTIZE_PER_CHANNEL) and tuple(dq.args[4:6]) != (-127, 127):
        return None
    return _symmetric_weight(gm, dq)


_ref._symmetric_weight = _narrow_symmetric_weight

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
