"""Mistake: the batch is marked dynamic on the first input only (`dynamic_shapes=({0: Dim.AUTO}, None, ...)`): on a
model of two inputs the other is exported at the example's batch size, and since the two meet (an add), export
fixes the first one's batch too. Calibration batches of another size then fail a shape guard.
Lesson: "dimension 0 of every input is the batch" and "Export with `dynamic_shapes` on dimension 0 of every input"."""

import torch

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('every_linear_and_add_runs_int8_on_the_npu', 'quantized_model_tracks_eager',
    'random_mlps_run_int8_on_the_npu')


def quantize_for_npu(model, example_inputs, calibration_batches, *, keep_float=()):
    dynamic = ({0: torch.export.Dim.AUTO},) + (None,) * (len(example_inputs) - 1)
    exported = torch.export.export(model.eval(), tuple(example_inputs), dynamic_shapes=dynamic)
    prepared = _ref.prepare_pt2e(exported.module(), _ref.NPUQuantizer(keep_float=keep_float))
    with torch.no_grad():
        for batch in calibration_batches:
            prepared(*batch)
    return _ref.convert_pt2e(prepared)


_ref.quantize_for_npu = quantize_for_npu

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
