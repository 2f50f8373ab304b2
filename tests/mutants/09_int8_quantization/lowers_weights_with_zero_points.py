"""Mistake: any per-channel weight is lowered: its zero points and its axis are ignored, so a per_channel_affine
weight is read as if symmetric."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('weights_the_int8_linear_cannot_read_stay_float',)



def _symmetric_weight(gm, dq):
    if not _ref._calls(dq, _ref.DEQUANTIZE_PER_CHANNEL):
        return None
    return dq.args[0], _ref._attr(gm, dq.args[1]).to(_ref.torch.float32)


_ref._symmetric_weight = _symmetric_weight

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
