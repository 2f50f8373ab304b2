"""Mistake: every layer whose own SQNR is under the bar kept float, the model never measured. Breaks "a layer under
the bar alone stays quantized if the worse ones kept float are enough" (and layers above it alone can add up to a
model under it)."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('choose_float_layers_keeps_the_fewest_worst_layers',)


def choose_float_layers(sensitivity, model_sqnr, bar=20.0):
    return [name for name, value in sorted(sensitivity, key=lambda pair: pair[1]) if value < bar]


_ref.choose_float_layers = choose_float_layers


NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
