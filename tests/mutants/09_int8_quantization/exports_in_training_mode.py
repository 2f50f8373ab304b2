"""Mistake: the model is exported in whatever mode it is handed over in, without .eval(): a model in training mode
is quantized with its Dropout active, so every call drops other units (blind round 2, wrong_no_eval)."""

import torch

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('quantized_model_tracks_eager',)


def quantize_for_npu(model, example_inputs, calibration_batches, *, per_channel=True, keep_float=()):
    dynamic = tuple({0: torch.export.Dim.AUTO} for _ in example_inputs)
    exported = torch.export.export(model, tuple(example_inputs), dynamic_shapes=dynamic)
    prepared = _ref.prepare_pt2e(exported.module(), _ref.NPUQuantizer(per_channel=per_channel, keep_float=keep_float))
    with torch.no_grad():
        for batch in calibration_batches:
            prepared(*batch)
    return _ref.convert_pt2e(prepared)


_ref.quantize_for_npu = quantize_for_npu

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
