"""Mistake: one weight scale per *input* channel (ch_axis=1): the NPU's int8 linear scales each output channel."""

import torch

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('every_linear_and_add_runs_int8_on_the_npu', 'kept_float_layers_stay_float_and_the_rest_run_int8',
    'quantize_with_sensitivity_reaches_the_bar', 'quantizer_annotates_linears_and_adds',
    'random_mlps_run_int8_on_the_npu', 'skewed_weights_keep_their_small_channels')
_ref.WEIGHT_PER_CHANNEL = _ref.QuantizationSpec(
    dtype=torch.int8, quant_min=-127, quant_max=127, qscheme=torch.per_channel_symmetric, ch_axis=1,
    is_dynamic=False, observer_or_fake_quant_ctr=_ref.PerChannelMinMaxObserver)

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
