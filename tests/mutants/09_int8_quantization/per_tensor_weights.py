"""Mistake: one scale for each whole weight (per_tensor_symmetric): the largest output channel sets it, and the
small channels round to a few codes."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('every_linear_and_add_runs_int8_on_the_npu', 'kept_float_layers_stay_float_and_the_rest_run_int8',
    'quantize_with_sensitivity_reaches_the_bar', 'quantizer_annotates_linears_and_adds',
    'random_mlps_run_int8_on_the_npu', 'skewed_weights_keep_their_small_channels')

_ref.WEIGHT_PER_CHANNEL = _ref.WEIGHT_PER_TENSOR

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
