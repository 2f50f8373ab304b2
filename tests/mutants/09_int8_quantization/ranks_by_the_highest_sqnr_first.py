"""Mistake: the ranking read from the wrong end: the layers that lose LEAST are kept float first. Breaks "rank the
layers by their own SQNR, lowest first"."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('choose_float_layers_keeps_the_fewest_worst_layers', 'quantize_with_sensitivity_reaches_the_bar')


def choose_float_layers(sensitivity, model_sqnr, bar=20.0):
    ranking = [name for name, _ in sorted(sensitivity, key=lambda pair: pair[1], reverse=True)]
    for count in range(len(ranking) + 1):
        if model_sqnr(ranking[:count]) >= bar:
            return ranking[:count]
    return ranking


_ref.choose_float_layers = choose_float_layers


NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
