"""Mistake: the linear's output is always quantized and a relu after it is annotated on its own: a quantize sits
between them, and the relu runs in float on the CPU."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('every_linear_and_add_runs_int8_on_the_npu', 'kept_float_layers_stay_float_and_the_rest_run_int8',
    'layer_sensitivity_quantizes_each_layer_alone', 'quantize_with_sensitivity_reaches_the_bar',
    'quantizer_annotates_linears_and_adds', 'random_mlps_run_int8_on_the_npu', 'relu_rides_on_its_linear',
    'skewed_weights_keep_their_small_channels')



def _annotate_relus(self, model):
    for node in model.graph.nodes:
        if _ref._calls(node, _ref.aten.linear.default):
            node.meta["quantization_annotation"] = _ref.QuantizationAnnotation(
                input_qspec_map={node.args[0]: _ref.ACTIVATION, node.args[1]: self.weight_spec},
                output_qspec=_ref.ACTIVATION, _annotated=True)
        elif _ref._calls(node, _ref.aten.add.Tensor) and all(isinstance(a, _ref.torch.fx.Node) for a in node.args[:2]):
            self._annotate_add(node)
        elif _ref._calls(node, _ref.aten.relu.default):
            node.meta["quantization_annotation"] = _ref.QuantizationAnnotation(
                input_qspec_map={node.args[0]: _ref.ACTIVATION}, output_qspec=_ref.ACTIVATION, _annotated=True)
    return model


_ref.NPUQuantizer.annotate = _annotate_relus

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
