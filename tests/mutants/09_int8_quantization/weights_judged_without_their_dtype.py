"""Mistake: a weight is the int8 linear's by its axis (0) and its zero points (all 0) alone; its dtype is never
looked at, so an int16 or uint8 weight is handed to the int8 linear (blind round 4, wrong_weight_dtype_unchecked:
the NPU refuses it, "input weight ... is int16"; a cast to int8 would wrap silently). Lesson: "a weight that is not
int8 per output channel with zero points all 0" (Step 3, the guards: "Its dtype ...")."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('weights_the_int8_linear_cannot_read_stay_float',)


def _symmetric_weight(gm, dq):
    if not _ref._calls(dq, _ref.DEQUANTIZE_PER_CHANNEL):
        return None
    weight, scale_node, zero_point_node, axis = dq.args[:4]
    scales, zero_points = _ref._attr(gm, scale_node), _ref._attr(gm, zero_point_node)
    if axis != 0 or scales is None or zero_points is None or bool(zero_points.any()):
        return None
    return weight, scales.to(_ref.torch.float32)


_ref._symmetric_weight = _symmetric_weight

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
