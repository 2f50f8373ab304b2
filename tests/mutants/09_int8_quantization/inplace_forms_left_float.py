"""Mistake: only `aten.relu.default` and `aten.add.Tensor` are patterns. Export keeps nn.ReLU(inplace=True) and
`z += h` as `aten.relu_` and `aten.add_.Tensor`: such a relu no longer rides on its linear, and such an add stays
float on the CPU, though the int8 unit runs them exactly as their out-of-place forms."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('every_int8_pattern_becomes_one_int8_op', 'every_linear_and_add_runs_int8_on_the_npu',
    'quantizer_annotates_linears_and_adds', 'random_mlps_run_int8_on_the_npu', 'relu_rides_on_its_linear')

_ref.RELUS = (_ref.aten.relu.default,)
_ref.TENSOR_ADDS = (_ref.aten.add.Tensor,)

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
