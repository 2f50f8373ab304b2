"""Mistake: the Quantizer annotates every op of NPU_OPS, kata 4's float table: gelu, sigmoid, mul and the add of a
number get int8 inputs and outputs, though the int8 unit runs none of them."""

import torch

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('kept_float_layers_stay_float_and_the_rest_run_int8', 'layer_sensitivity_quantizes_each_layer_alone',
    'quantize_with_sensitivity_reaches_the_bar', 'quantizer_annotates_nothing_the_int8_unit_cannot_run',
    'relu_rides_on_its_linear')

from katas.common.npu import NPU_OPS, canonical_name  # noqa: E402

_annotate = _ref.NPUQuantizer.annotate


def annotate(self, model):
    _annotate(self, model)
    for node in model.graph.nodes:
        if (node.op == "call_function" and canonical_name(node.target) in NPU_OPS
                and "quantization_annotation" not in node.meta):
            inputs = {a: _ref.ACTIVATION for a in node.args if isinstance(a, torch.fx.Node)}
            node.meta["quantization_annotation"] = _ref.QuantizationAnnotation(
                input_qspec_map=inputs, output_qspec=_ref.ACTIVATION, _annotated=True)
    return model


_ref.NPUQuantizer.annotate = annotate

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
