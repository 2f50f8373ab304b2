"""Mistake: the Quantizer takes the relu that rides on a linear to be the node right after it in the graph
(`linear.next`), when the linear has one user. Export keeps the forward's order, so another op may sit between a
linear and its only user, the relu: that relu is then left float on the CPU, and the linear's output is quantized
before it (blind round 3, wrong_relu_is_next_node). Lesson: "for a `linear` whose **only** user is a `relu`,
annotate the pair as one" (its user, wherever export puts it)."""

from checker.kit import load_reference
from katas.common.pt2e import QuantizationAnnotation

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('every_linear_and_add_runs_int8_on_the_npu', 'relu_rides_on_its_linear')


def _next_relu(linear):
    users, after = list(linear.users), linear.next
    if len(users) == 1 and users[0] is after and _ref._calls_any(after, _ref.RELUS):
        return after
    return None


def _annotate_linear(self, linear):
    relu = _next_relu(linear)
    linear.meta["quantization_annotation"] = QuantizationAnnotation(
        input_qspec_map={linear.args[0]: _ref.ACTIVATION, linear.args[1]: self.weight_spec},
        output_qspec=None if relu is not None else _ref.ACTIVATION, _annotated=True)
    if relu is not None:
        relu.meta["quantization_annotation"] = QuantizationAnnotation(output_qspec=_ref.ACTIVATION, _annotated=True)


_ref.NPUQuantizer._annotate_linear = _annotate_linear

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
