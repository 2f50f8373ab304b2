"""Mistake: the bias is annotated like an activation (int8 per tensor): the device wants it float, to round it to
int32 at x_scale * weight_scale; at int8 it loses most of its precision."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('quantizer_annotates_linears_and_adds', 'skewed_weights_keep_their_small_channels')

_annotate_linear = _ref.NPUQuantizer._annotate_linear


def _annotate_linear_and_bias(self, linear):
    _annotate_linear(self, linear)
    if len(linear.args) > 2 and linear.args[2] is not None:
        linear.meta["quantization_annotation"].input_qspec_map[linear.args[2]] = _ref.ACTIVATION


_ref.NPUQuantizer._annotate_linear = _annotate_linear_and_bias

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
