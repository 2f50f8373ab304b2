"""Mistake: exported without dynamic shapes: the quantized model takes only the example's batch size."""

import torch

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('every_linear_and_add_runs_int8_on_the_npu', 'kept_float_layers_stay_float_and_the_rest_run_int8',
    'layer_sensitivity_quantizes_each_layer_alone', 'quantized_model_tracks_eager', 'random_mlps_run_int8_on_the_npu',
    'skewed_weights_keep_their_small_channels')


def quantize_for_npu(model, example_inputs, calibration_batches, *, keep_float=()):
    size = example_inputs[0].shape[0]
    exported = torch.export.export(model.eval(), tuple(example_inputs))
    prepared = _ref.prepare_pt2e(exported.module(), _ref.NPUQuantizer(keep_float=keep_float))
    with torch.no_grad():
        for batch in calibration_batches:  # in slices of the one batch size the static export takes
            for start in range(0, batch[0].shape[0] - size + 1, size):
                prepared(*(t[start:start + size] for t in batch))
    return _ref.convert_pt2e(prepared)


_ref.quantize_for_npu = quantize_for_npu

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
