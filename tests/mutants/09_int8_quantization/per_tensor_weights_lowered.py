"""Mistake: a weight quantized per tensor (a dequantize_per_tensor, one scale) is lowered too, its scale repeated
once per output channel. Lesson: "a weight that is not int8 per output channel with zero points all 0" (Step 3, the
guards: "a `dequantize_per_tensor` weight, or axis 1, has no scale per output channel")."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('weights_the_int8_linear_cannot_read_stay_float',)

_per_channel = _ref._symmetric_weight


def _symmetric_weight(gm, dq):
    if isinstance(dq, _ref.torch.fx.Node) and _ref._calls(dq, _ref.DEQUANTIZE_PER_TENSOR):
        weight, scale, zero_point, _, _, dtype = dq.args[:6]
        codes = _ref._attr(gm, weight) if isinstance(weight, _ref.torch.fx.Node) else None
        if codes is None or dtype != _ref.torch.int8 or zero_point != 0:
            return None
        return weight, _ref.torch.full((codes.shape[0],), float(scale), dtype=_ref.torch.float32)
    return _per_channel(gm, dq)


_ref._symmetric_weight = _symmetric_weight

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
