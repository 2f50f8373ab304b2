"""Mistake: quantize_for_npu peeks at the calibration batches (`next(iter(batches), None)`) to fall back on the
example input when there are none. Given a generator, the peek uses the first batch up: the observers never see
it, and when it is the widest, serving inputs are clipped."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('calibration_batches_set_the_ranges',)

_quantize = _ref.quantize_for_npu


def quantize_for_npu(model, example_inputs, calibration_batches, **options):
    first = next(iter(calibration_batches), None)
    batches = [tuple(example_inputs)] if first is None else calibration_batches
    return _quantize(model, example_inputs, batches, **options)


_ref.quantize_for_npu = quantize_for_npu

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
