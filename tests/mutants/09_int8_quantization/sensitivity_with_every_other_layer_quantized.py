"""Mistake: a layer's sensitivity measured by keeping THAT layer float and quantizing every other one (what the model
gains without it), not by quantizing it alone. Breaks "Alone, not "everything but this layer": with the others
quantized, each number measures the others' loss too"."""

import copy

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('layer_sensitivity_quantizes_each_layer_alone', 'quantize_with_sensitivity_reaches_the_bar')


def _sensitivity(model, exported, batches):
    layers = [node.name for node in exported.graph.nodes if _ref._is_layer(node)]
    return [(name, _ref._sqnr_over(model, _ref._convert(copy.deepcopy(exported), batches, keep_float=[name]), batches))
            for name in layers]


_ref._sensitivity = _sensitivity


NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
