"""Mistake: the add's two inputs get an observer each, so they come out with different scales, and the int8 add,
which takes one scale, cannot run them."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('adds_read_one_scale', 'every_linear_and_add_runs_int8_on_the_npu',
    'kept_float_layers_stay_float_and_the_rest_run_int8', 'quantize_with_sensitivity_reaches_the_bar',
    'random_mlps_run_int8_on_the_npu')


def _annotate_add(add):
    first, second = add.args[:2]
    add.meta["quantization_annotation"] = _ref.QuantizationAnnotation(
        input_qspec_map={first: _ref.ACTIVATION, second: _ref.ACTIVATION}, output_qspec=_ref.ACTIVATION,
        _annotated=True)


_ref.NPUQuantizer._annotate_add = staticmethod(_annotate_add)

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
