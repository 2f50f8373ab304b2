"""Mistake: the add guard checks the dtype of its first input's dequantize only: the two inputs share one observer,
so (the idea goes) they share a dtype too. They share one (scale, zero_point); a graph may still store one of them
in another container (uint8, int16), and the int8 add then reads it as int8 (blind round 3,
wrong_add_dtype_first_input_only). Lesson: "look at both ends, the dequantize nodes feeding the op and the quantize
ending it"; every input of an add is one of those ends."""

import torch

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('patterns_of_other_kinds_stay_float',)


def _lower_add(gm, add):
    a_dq, b_dq = add.args[:2]
    a_params = _ref._per_tensor_params(a_dq)
    b_params = (tuple(b_dq.args[1:3]) if isinstance(b_dq, torch.fx.Node)
                and _ref._calls(b_dq, _ref.DEQUANTIZE_PER_TENSOR) else None)
    q_out = _ref._quantized_output(add)
    if a_params is None or q_out is None or a_params != b_params or add.kwargs.get("alpha", 1) != 1:
        return
    _, out_scale, out_zero_point = q_out.args[:3]
    _ref._replace(gm, q_out, _ref.INT8_ADD, (a_dq.args[0], b_dq.args[0], *a_params, out_scale, out_zero_point),
                  dead=[add, a_dq, b_dq])


_ref._lower_add = _lower_add

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
