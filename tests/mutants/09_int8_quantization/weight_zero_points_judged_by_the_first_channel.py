"""Mistake: a per-channel weight's zero points are judged by the first channel's alone (they are all equal, the idea
goes), so a weight whose first channel is symmetric and whose middle or last channel has a zero point is lowered,
and the int8 linear, which has no weight zero point, reads that channel wrong.
Lesson: "a weight that is not int8 per output channel with zero points all 0: each of the three is a test of its
own ... Its zero points (every channel's, not only the first's ...)"."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('weights_the_int8_linear_cannot_read_stay_float',)


def _symmetric_weight(gm, dq):
    if not _ref._calls(dq, _ref.DEQUANTIZE_PER_CHANNEL):
        return None
    weight, scale_node, zero_point_node, axis, _, _, dtype = dq.args[:7]
    scales, zero_points = _ref._attr(gm, scale_node), _ref._attr(gm, zero_point_node)
    if dtype != _ref.torch.int8 or axis != 0 or scales is None or zero_points is None:
        return None
    if int(zero_points.flatten()[0]) != 0:  # the first channel's only
        return None
    return weight, scales.to(_ref.torch.float32)


_ref._symmetric_weight = _symmetric_weight

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
