"""Mistake: "only user" counts only the ops that read the linear; the graph's output node is left out. When the
model also returns the linear's output z, the relu still rides on it, and z itself is never quantized: the int8
linear cannot run (its relu'd output is all the device makes), and the linear stays float."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('every_linear_and_add_runs_int8_on_the_npu', 'quantizer_annotates_linears_and_adds',
    'relu_rides_on_its_linear')


def _fusable_relu(linear):
    users = [u for u in linear.users if u.op != "output"]
    if len(users) == 1 and _ref._calls_any(users[0], _ref.RELUS):
        return users[0]
    return None


_ref._fusable_relu = _fusable_relu

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
