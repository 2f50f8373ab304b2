"""Mistake: a weight counts as int8 when its quant_min and quant_max lie within [-128, 127]; the dtype argument is
never read, so an int16 weight that holds int8's codes on int8's range (another container) is lowered. Lesson: "a
weight is the int8 linear's by its dtype, axis and zero points, not by its range"; Step 3, the guards: "Its dtype
(the `dequantize_per_channel`'s last argument)"."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('weights_the_int8_linear_cannot_read_stay_float',)


def _symmetric_weight(gm, dq):
    if not _ref._calls(dq, _ref.DEQUANTIZE_PER_CHANNEL):
        return None
    weight, scale_node, zero_point_node, axis, quant_min, quant_max = dq.args[:6]
    scales, zero_points = _ref._attr(gm, scale_node), _ref._attr(gm, zero_point_node)
    if not -128 <= quant_min <= quant_max <= 127 or axis != 0 or scales is None or zero_points is None:
        return None
    if bool(zero_points.any()):
        return None
    return weight, scales.to(_ref.torch.float32)


_ref._symmetric_weight = _symmetric_weight

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
