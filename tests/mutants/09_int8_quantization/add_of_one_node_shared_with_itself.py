"""Mistake: an add's second input always gets SharedQuantizationSpec((first, add)), even in `z + z`, where the two
inputs are one node: the one edge is shared with itself, no observer is ever made for it, and prepare_pt2e recurses
until Python gives up. (If `a is b`, there is one input: annotate it once.)"""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('every_linear_and_add_runs_int8_on_the_npu', 'quantized_model_tracks_eager',
    'quantizer_annotates_linears_and_adds', 'random_mlps_run_int8_on_the_npu')


def _annotate_add(add):
    first, second = add.args[:2]
    add.meta["quantization_annotation"] = _ref.QuantizationAnnotation(
        input_qspec_map={first: _ref.ACTIVATION, second: _ref.SharedQuantizationSpec((first, add))},
        output_qspec=_ref.ACTIVATION, _annotated=True)


_ref.NPUQuantizer._annotate_add = staticmethod(_annotate_add)

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
