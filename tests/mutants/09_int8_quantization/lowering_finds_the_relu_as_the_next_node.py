"""Mistake: the lowering looks for a pattern's relu at the node right after the linear (`linear.next`). Export keeps
the forward's order, so another op may sit between a linear and its only user, the relu: that pattern (dq ->
linear -> relu -> q) is then not recognised and stays float on the CPU. Lesson: "for a `linear` whose **only** user
is a `relu`, annotate the pair as one" (its user, wherever export puts it), and Step 3's pattern
`linear ─[relu]─ q(out)`."""

import torch

from checker.kit import load_reference

_ref = load_reference("09_int8_quantization", "int8.py")
KILLED_BY = ('every_int8_pattern_becomes_one_int8_op', 'every_linear_and_add_runs_int8_on_the_npu')


def _next_relu(linear):
    users, after = list(linear.users), linear.next
    if len(users) == 1 and users[0] is after and _ref._calls_any(after, _ref.RELUS):
        return after
    return None


def _lower_linear(gm, linear):
    x_dq, w_dq = linear.args[:2]
    bias = linear.args[2] if len(linear.args) > 2 else linear.kwargs.get("bias")
    x_params = _ref._per_tensor_params(x_dq)
    weight = _ref._symmetric_weight(gm, w_dq) if isinstance(w_dq, torch.fx.Node) else None
    relu = _next_relu(linear)
    q_out = _ref._quantized_output(relu if relu is not None else linear)
    if x_params is None or weight is None or q_out is None:
        return
    weight_node, scales = weight
    scale_node = _ref._add_constant(gm, f"{linear.name}_weight_scale", scales, q_out)
    _, out_scale, out_zero_point = q_out.args[:3]
    _ref._replace(gm, q_out, _ref.INT8_LINEAR,
                  (x_dq.args[0], *x_params, weight_node, scale_node, bias, out_scale, out_zero_point,
                   relu is not None),
                  dead=[n for n in (relu, linear, x_dq, w_dq) if n is not None])


_ref._lower_linear = _lower_linear

NPUQuantizer, quantize_for_npu, lower_to_npu_int8, sqnr = (
    _ref.NPUQuantizer, _ref.quantize_for_npu, _ref.lower_to_npu_int8, _ref.sqnr)
layer_sensitivity, choose_float_layers, quantize_with_sensitivity = (
    _ref.layer_sensitivity, _ref.choose_float_layers, _ref.quantize_with_sensitivity)
