"""Mistake: the add guard compares the two dequantize nodes' scales only, not their zero points; the int8 add then
reads both inputs with the first input's zero point (blind round 2, wrong_add_scale_only)."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('add_of_two_scales_stays_float',)

_params = _ref._per_tensor_params


def _lower_add(gm, add):
    a_dq, b_dq = add.args[:2]
    a_params, b_params = _params(a_dq), _params(b_dq)
    q_out = _ref._quantized_output(add)
    if a_params is None or b_params is None or q_out is None or a_params[0] != b_params[0] \
            or add.kwargs.get("alpha", 1) != 1:
        return
    _, out_scale, out_zero_point = q_out.args[:3]
    _ref._replace(gm, q_out, _ref.INT8_ADD, (a_dq.args[0], b_dq.args[0], *a_params, out_scale, out_zero_point),
                  dead=[add, a_dq, b_dq])


_ref._lower_add = _lower_add

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
