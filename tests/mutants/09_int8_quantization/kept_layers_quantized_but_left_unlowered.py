"""Mistake: a layer "kept float" by leaving it out of the lowering: the Quantizer still annotates it, so it runs as
dequantize -> float op -> quantize on the CPU, every rounding still there. Breaks "leave the named layers
unannotated: nothing on their inputs, their weight or their output"."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('kept_float_layers_stay_float_and_the_rest_run_int8', 'layer_sensitivity_quantizes_each_layer_alone',
    'quantize_with_sensitivity_reaches_the_bar')

_annotate = _ref.NPUQuantizer.annotate
_convert = _ref._convert
_lower = _ref.lower_to_npu_int8


def annotate(self, model):
    kept, self.keep_float = self.keep_float, frozenset()
    try:
        return _annotate(self, model)
    finally:
        self.keep_float = kept


def convert(exported, calibration_batches, *, per_channel=True, keep_float=()):
    converted = _convert(exported, calibration_batches, per_channel=per_channel, keep_float=keep_float)
    converted.meta["keep_float"] = frozenset(keep_float)
    return converted


def lower_to_npu_int8(converted):
    kept = converted.meta.get("keep_float", frozenset())
    renamed = {}
    for node in converted.graph.nodes:  # hide the kept layers from the lowering's pattern tests
        if node.name in kept:
            renamed[node] = node.target
            node.target = _ref.aten.mul.Tensor
    try:
        _lower(converted)
    finally:
        for node, target in renamed.items():
            node.target = target
        converted.recompile()
    return converted


_ref.NPUQuantizer.annotate = annotate
_ref._convert = convert
_ref.lower_to_npu_int8 = lower_to_npu_int8


NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
