"""Mistake: the model's SQNR taken to rise with every layer kept float, so the fewest layers are found by bisection.
Breaks "Try every start in order: the model's SQNR need not rise as layers stay float"."""

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('choose_float_layers_keeps_the_fewest_worst_layers',)


def choose_float_layers(sensitivity, model_sqnr, bar=20.0):
    ranking = [name for name, _ in sorted(sensitivity, key=lambda pair: pair[1])]
    low, high = 0, len(ranking)
    while low < high:
        middle = (low + high) // 2
        if model_sqnr(ranking[:middle]) >= bar:
            high = middle
        else:
            low = middle + 1
    return ranking[:low]


_ref.choose_float_layers = choose_float_layers


NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
