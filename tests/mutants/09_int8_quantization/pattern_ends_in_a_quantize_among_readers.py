"""Mistake: a pattern whose op is a relu or an add ends in an int8 quantize among the op's readers; its other readers
(a float op, the graph's output, a second quantize) are ignored. (A bare linear still needs one reader, as in blind
round 5's wrong_q_any_user.) The pattern is lowered, and the float op stays in the graph for the other reader:
computed twice, on the CPU and on the NPU.
Lesson: the guard "a pattern that does not end in a per-tensor quantize that is its op's only reader (... or a
reader needs the float value)", for the relu, the linear and the add alike."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('patterns_of_other_kinds_stay_float',)

_guarded = _ref._quantized_output


def _quantized_output(node):
    if _ref._calls(node, _ref.aten.linear.default):
        return _guarded(node)
    return next((u for u in node.users if _ref._calls(u, _ref.QUANTIZE_PER_TENSOR) and u.args[5] == _ref.torch.int8),
                None)


_ref._quantized_output = _quantized_output

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
