"""Mistake: a value's (scale, zero point) is taken from the quantize that made it, not from the dequantize that
feeds the op. convert_pt2e writes the same numbers on both, so only a graph whose dequantize carries other numbers
(edited by another tool or a person) shows that the int8 op then reads its input on the wrong grid."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('add_of_two_scales_stays_float', 'lowering_reads_each_number_from_its_own_node')

_params = _ref._per_tensor_params


def _per_tensor_params(node):
    params = _params(node)
    if params is None:
        return None
    made_by = node.args[0]
    if isinstance(made_by, _ref.torch.fx.Node) and _ref._calls(made_by, _ref.QUANTIZE_PER_TENSOR):
        return made_by.args[1], made_by.args[2]
    return params


_ref._per_tensor_params = _per_tensor_params

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
