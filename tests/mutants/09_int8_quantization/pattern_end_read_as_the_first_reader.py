"""Mistake: the quantize ending a pattern is taken as its op's first reader (`next(iter(last.users))`, hint 3 without
its count): when the quantize comes first, a reader after it (a float op, the graph's output, a second quantize) is
never looked at, and the pattern is lowered though that reader needs the float value. (A bare linear still needs
one reader here: the mistake is on the relu and the add that end a pattern.)
Lesson: the guard "a pattern that does not end in a per-tensor quantize that is its op's only reader"."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('patterns_of_other_kinds_stay_float',)

_guarded = _ref._quantized_output


def _quantized_output(node):
    if _ref._calls(node, _ref.aten.linear.default):
        return _guarded(node)
    q = next(iter(node.users), None)
    if q is None or not _ref._calls(q, _ref.QUANTIZE_PER_TENSOR) or q.args[5] != _ref.torch.int8:
        return None
    return q


_ref._quantized_output = _quantized_output

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
