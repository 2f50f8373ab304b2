"""Mistake: a kept linear left unannotated, but the relu that would ride on it still quantizes its output. Breaks
"leave the named layers unannotated: ... and nothing on a relu that would have ridden on a kept linear"."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('kept_float_layers_stay_float_and_the_rest_run_int8',)

_annotate = _ref.NPUQuantizer.annotate


def annotate(self, model):
    _annotate(self, model)
    for node in model.graph.nodes:
        if node.name in self.keep_float and _ref._calls(node, _ref.aten.linear.default):
            relu = _ref._fusable_relu(node)
            if relu is not None:
                relu.meta["quantization_annotation"] = _ref.QuantizationAnnotation(output_qspec=_ref.ACTIVATION,
                                                                                   _annotated=True)
    return model


_ref.NPUQuantizer.annotate = annotate


NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
