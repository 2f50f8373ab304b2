"""Mistake: an add's second input is shared with the first input as a node, `SharedQuantizationSpec(first)`, not
with the edge `(first, add)`. A node means its output, which has an observer only when something annotated it:
with a model input or a gelu's output as the first input, prepare_pt2e fails with a KeyError naming that node
(blind rounds 3 and 4, wrong_share_with_producer_node / wrong_shared_with_node: `x0 + gelu(x0)`). Lesson: "Give it
the edge `(a, add_node)`, which you annotate on the line before."."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('kept_float_layers_stay_float_and_the_rest_run_int8', 'layer_sensitivity_quantizes_each_layer_alone',
    'quantize_with_sensitivity_reaches_the_bar', 'random_mlps_run_int8_on_the_npu')


def _annotate_add(add):
    first, second = add.args[:2]
    inputs = {first: _ref.ACTIVATION}
    if second is not first:
        inputs[second] = _ref.SharedQuantizationSpec(first)
    add.meta["quantization_annotation"] = _ref.QuantizationAnnotation(
        input_qspec_map=inputs, output_qspec=_ref.ACTIVATION, _annotated=True)


_ref.NPUQuantizer._annotate_add = staticmethod(_annotate_add)

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
