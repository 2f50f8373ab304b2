"""Kata 9 reference: a Quantizer for the int8 NPU, the PT2E flow, and lowering dq -> op -> q patterns to int8 ops."""
from __future__ import annotations

import copy
from typing import Callable, Iterable, Sequence

import torch
import torch.fx

from katas.common.npu.int8 import INT8_ADD, INT8_LINEAR
from katas.common.pt2e import (
    DEQUANTIZE_PER_CHANNEL,
    DEQUANTIZE_PER_TENSOR,
    QUANTIZE_PER_TENSOR,
    MinMaxObserver,
    PerChannelMinMaxObserver,
    QuantizationAnnotation,
    QuantizationSpec,
    Quantizer,
    SharedQuantizationSpec,
    convert_pt2e,
    prepare_pt2e,
)

aten = torch.ops.aten
RELUS = (aten.relu.default, aten.relu_.default)  # export keeps nn.ReLU(inplace=True) and `+=` in place:
TENSOR_ADDS = (aten.add.Tensor, aten.add_.Tensor)  # the same patterns for the int8 unit

# --- 1. the Quantizer ---------------------------------------------------------------------------------------

ACTIVATION = QuantizationSpec(dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_tensor_affine,
                              is_dynamic=False, observer_or_fake_quant_ctr=MinMaxObserver)
WEIGHT_PER_CHANNEL = QuantizationSpec(dtype=torch.int8, quant_min=-127, quant_max=127,
                                      qscheme=torch.per_channel_symmetric, ch_axis=0, is_dynamic=False,
                                      observer_or_fake_quant_ctr=PerChannelMinMaxObserver)
WEIGHT_PER_TENSOR = QuantizationSpec(dtype=torch.int8, quant_min=-127, quant_max=127,
                                     qscheme=torch.per_tensor_symmetric, is_dynamic=False,
                                     observer_or_fake_quant_ctr=MinMaxObserver)


def _calls(node: torch.fx.Node, target) -> bool:
    return node.op == "call_function" and node.target is target


def _calls_any(node: torch.fx.Node, targets: tuple) -> bool:
    return node.op == "call_function" and node.target in targets


def _fusable_relu(linear: torch.fx.Node) -> torch.fx.Node | None:
    """The relu the int8 linear can apply itself: the linear's only user. With a second user the linear's own
    output is needed unclamped, so it must be quantized on its own."""
    users = list(linear.users)
    if len(users) == 1 and _calls_any(users[0], RELUS):
        return users[0]
    return None


def _is_layer(node: torch.fx.Node) -> bool:
    """A pattern the Quantizer annotates: a linear, or an add of two tensors (in place or not)."""
    return _calls(node, aten.linear.default) or (
        _calls_any(node, TENSOR_ADDS) and all(isinstance(a, torch.fx.Node) for a in node.args[:2]))


class NPUQuantizer(Quantizer):
    """Annotates exactly what the NPU's int8 unit runs: linear (with the relu after it) and add of two tensors,
    except the layers named in `keep_float` (node names of the exported graph), which it leaves float."""

    def __init__(self, per_channel: bool = True, keep_float: Iterable[str] = ()) -> None:
        super().__init__()
        self.weight_spec = WEIGHT_PER_CHANNEL if per_channel else WEIGHT_PER_TENSOR
        self.keep_float = frozenset(keep_float)

    def annotate(self, model: torch.fx.GraphModule) -> torch.fx.GraphModule:
        for node in model.graph.nodes:
            if node.name in self.keep_float:
                continue  # a kept linear's riding relu is annotated only with its linear: it stays float too
            if _calls(node, aten.linear.default):
                self._annotate_linear(node)
            elif _calls_any(node, TENSOR_ADDS) and all(isinstance(a, torch.fx.Node) for a in node.args[:2]):
                self._annotate_add(node)
        return model

    @staticmethod
    def _annotate_add(add: torch.fx.Node) -> None:
        """Both inputs observed as one (the int8 add takes one scale); `x + x` is one input, annotated once."""
        first, second = add.args[:2]
        inputs = {first: ACTIVATION}
        if second is not first:
            inputs[second] = SharedQuantizationSpec((first, add))
        add.meta["quantization_annotation"] = QuantizationAnnotation(input_qspec_map=inputs,
                                                                     output_qspec=ACTIVATION, _annotated=True)

    def _annotate_linear(self, linear: torch.fx.Node) -> None:
        relu = _fusable_relu(linear)
        linear.meta["quantization_annotation"] = QuantizationAnnotation(
            input_qspec_map={linear.args[0]: ACTIVATION, linear.args[1]: self.weight_spec},
            output_qspec=None if relu is not None else ACTIVATION, _annotated=True)
        if relu is not None:
            relu.meta["quantization_annotation"] = QuantizationAnnotation(output_qspec=ACTIVATION, _annotated=True)

    def validate(self, model: torch.fx.GraphModule) -> None:
        pass


# --- 2. export, prepare, calibrate, convert --------------------------------------------------------------------

def _export(model: torch.nn.Module, example_inputs: tuple) -> torch.fx.GraphModule:
    dynamic = tuple({0: torch.export.Dim.AUTO} for _ in example_inputs)
    return torch.export.export(model.eval(), tuple(example_inputs), dynamic_shapes=dynamic).module()


def _convert(exported: torch.fx.GraphModule, calibration_batches: Iterable[tuple], *, per_channel: bool = True,
             keep_float: Iterable[str] = ()) -> torch.fx.GraphModule:
    prepared = prepare_pt2e(exported, NPUQuantizer(per_channel=per_channel, keep_float=keep_float))
    with torch.no_grad():
        for batch in calibration_batches:
            prepared(*batch)
    return convert_pt2e(prepared)


def quantize_for_npu(model: torch.nn.Module, example_inputs: tuple, calibration_batches: Iterable[tuple],
                     *, per_channel: bool = True, keep_float: Iterable[str] = ()) -> torch.fx.GraphModule:
    """The model quantized for the NPU: exported with a dynamic batch, observed on every calibration batch,
    converted to a graph of quantize/dequantize patterns; the layers named in `keep_float` stay float."""
    return _convert(_export(model, example_inputs), calibration_batches, per_channel=per_channel,
                    keep_float=keep_float)


# --- 3. lowering -----------------------------------------------------------------------------------------------

def _per_tensor_params(node) -> tuple[float, int] | None:
    """(scale, zero_point) of an int8 per-tensor dequantize node, None for anything else."""
    if not isinstance(node, torch.fx.Node) or not _calls(node, DEQUANTIZE_PER_TENSOR):
        return None
    _, scale, zero_point, _, _, dtype = node.args[:6]
    if dtype != torch.int8 or not isinstance(scale, float) or not isinstance(zero_point, int):
        return None
    return scale, zero_point


def _attr(gm: torch.fx.GraphModule, node: torch.fx.Node) -> torch.Tensor | None:
    return torch.fx.graph_module._get_attr(gm, node.target) if node.op == "get_attr" else None  # noqa: SLF001


def _symmetric_weight(gm: torch.fx.GraphModule, dq: torch.fx.Node) -> tuple[torch.fx.Node, torch.Tensor] | None:
    """(int8 weight node, float32 scale per output channel) of a weight quantized per channel on axis 0 with zero
    points all 0, None otherwise: the NPU's int8 linear has no weight zero point and no other channel axis."""
    if not _calls(dq, DEQUANTIZE_PER_CHANNEL):
        return None
    weight, scale_node, zero_point_node, axis, _, _, dtype = dq.args[:7]
    scales, zero_points = _attr(gm, scale_node), _attr(gm, zero_point_node)
    if dtype != torch.int8 or axis != 0 or scales is None or zero_points is None:
        return None
    if bool(zero_points.any()):
        return None
    return weight, scales.to(torch.float32)


def _only_user(node: torch.fx.Node) -> torch.fx.Node | None:
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def _quantized_output(node: torch.fx.Node) -> torch.fx.Node | None:
    """The int8 per-tensor quantize node that is `node`'s only user, None otherwise."""
    q = _only_user(node)
    if q is None or not _calls(q, QUANTIZE_PER_TENSOR) or q.args[5] != torch.int8:
        return None
    return q


def _add_constant(gm: torch.fx.GraphModule, name: str, value: torch.Tensor, before: torch.fx.Node) -> torch.fx.Node:
    gm.register_buffer(name, value)
    with gm.graph.inserting_before(before):
        return gm.graph.get_attr(name)


def _replace(gm: torch.fx.GraphModule, q_out: torch.fx.Node, target, args: tuple,
             dead: Sequence[torch.fx.Node]) -> None:
    """Put one int8 op where `q_out` was and erase the pattern's float nodes nothing else reads."""
    with gm.graph.inserting_before(q_out):
        int8_node = gm.graph.call_function(target, args)
    q_out.replace_all_uses_with(int8_node)
    for node in dict.fromkeys((q_out, *dead)):  # `z + z` reads one dequantize twice: erase it once
        if not node.users:
            gm.graph.erase_node(node)


def _lower_linear(gm: torch.fx.GraphModule, linear: torch.fx.Node) -> None:
    x_dq, w_dq = linear.args[:2]
    bias = linear.args[2] if len(linear.args) > 2 else linear.kwargs.get("bias")
    x_params = _per_tensor_params(x_dq)
    weight = _symmetric_weight(gm, w_dq) if isinstance(w_dq, torch.fx.Node) else None
    relu = _fusable_relu(linear)
    q_out = _quantized_output(relu if relu is not None else linear)
    if x_params is None or weight is None or q_out is None:
        return  # not the pattern dq(int8) -> linear -> [relu] -> q(int8) with symmetric int8 weights
    weight_node, scales = weight
    scale_node = _add_constant(gm, f"{linear.name}_weight_scale", scales, q_out)
    _, out_scale, out_zero_point = q_out.args[:3]
    _replace(gm, q_out, INT8_LINEAR,
             (x_dq.args[0], *x_params, weight_node, scale_node, bias, out_scale, out_zero_point, relu is not None),
             dead=[n for n in (relu, linear, x_dq, w_dq) if n is not None])


def _lower_add(gm: torch.fx.GraphModule, add: torch.fx.Node) -> None:
    a_dq, b_dq = add.args[:2]
    a_params, b_params = _per_tensor_params(a_dq), _per_tensor_params(b_dq)
    q_out = _quantized_output(add)
    if a_params is None or q_out is None or a_params != b_params or add.kwargs.get("alpha", 1) != 1:
        return  # the int8 add takes one scale and zero point for both inputs, and no alpha
    _, out_scale, out_zero_point = q_out.args[:3]
    _replace(gm, q_out, INT8_ADD, (a_dq.args[0], b_dq.args[0], *a_params, out_scale, out_zero_point),
             dead=[add, a_dq, b_dq])


def lower_to_npu_int8(converted: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Replace every dq -> op -> q pattern the int8 NPU runs with one int8 op (in place; returned for chaining).
    Everything else stays as it was: float ops between dequantize and quantize, run on the CPU."""
    for node in list(converted.graph.nodes):
        if _calls(node, aten.linear.default):
            _lower_linear(converted, node)
        elif _calls_any(node, TENSOR_ADDS):
            _lower_add(converted, node)
    converted.graph.lint()
    converted.recompile()
    return converted


# --- 4. the metric ---------------------------------------------------------------------------------------------

def sqnr(reference: torch.Tensor, actual: torch.Tensor) -> float:
    """Signal-to-quantization-noise ratio in dB: 10 * log10(sum(reference**2) / sum((reference - actual)**2))."""
    reference, actual = reference.detach().double(), actual.detach().double()
    noise = (reference - actual).pow(2).sum()
    if noise == 0:
        return float("inf")
    return float(10 * torch.log10(reference.pow(2).sum() / noise))


# --- 5. sensitivity: which layers stay float ---------------------------------------------------------------------

BAR_DB = 20.0  # the kata's bar: the quantized model's SQNR against eager

def _leaves(value) -> list[torch.Tensor]:
    return [v for v in torch.utils._pytree.tree_leaves(value) if isinstance(v, torch.Tensor)]  # noqa: SLF001


def _sqnr_over(model: torch.nn.Module, quantized: torch.fx.GraphModule, batches: Sequence[tuple]) -> float:
    """SQNR of every output of every batch at once: the outputs flattened and concatenated."""
    references, actuals = [], []
    with torch.no_grad():
        for batch in batches:
            references += [t.reshape(-1) for t in _leaves(model(*batch))]
            actuals += [t.reshape(-1) for t in _leaves(quantized(*batch))]
    return sqnr(torch.cat([t.double() for t in references]), torch.cat([t.double() for t in actuals]))


def _sensitivity(model: torch.nn.Module, exported: torch.fx.GraphModule,
                 batches: Sequence[tuple]) -> list[tuple[str, float]]:
    layers = [node.name for node in exported.graph.nodes if _is_layer(node)]
    return [(name, _sqnr_over(model, _convert(copy.deepcopy(exported), batches,
                                              keep_float=[other for other in layers if other != name]), batches))
            for name in layers]


def layer_sensitivity(model: torch.nn.Module, example_inputs: tuple,
                      calibration_batches: Iterable[tuple]) -> list[tuple[str, float]]:
    """(layer, SQNR in dB) for every layer the Quantizer annotates, in graph order: the model quantized with that
    layer alone (every other layer kept float), calibrated and measured on every calibration batch."""
    batches = [tuple(batch) for batch in calibration_batches]  # read once, used once per layer
    model.eval()
    return _sensitivity(model, _export(model, example_inputs), batches)


def choose_float_layers(sensitivity: Sequence[tuple[str, float]], model_sqnr: Callable[[list[str]], float],
                        bar: float = BAR_DB) -> list[str]:
    """The fewest layers to keep float: rank the layers by their own SQNR, lowest first (equal ones in the order
    given), and return the shortest start of that ranking, the empty one first, with which the model reaches
    `bar` (model_sqnr(kept) >= bar); every layer if none does."""
    ranking = [name for name, _ in sorted(sensitivity, key=lambda pair: pair[1])]  # a stable sort: ties keep order
    for count in range(len(ranking) + 1):
        if model_sqnr(ranking[:count]) >= bar:
            return ranking[:count]
    return ranking


def quantize_with_sensitivity(model: torch.nn.Module, example_inputs: tuple, calibration_batches: Iterable[tuple],
                              bar: float = BAR_DB) -> tuple[torch.fx.GraphModule, list[str]]:
    """The sensitivity step, then quantization: (the model quantized with the layers choose_float_layers picks kept
    float, those layers)."""
    batches = [tuple(batch) for batch in calibration_batches]
    model.eval()
    exported = _export(model, example_inputs)
    made: dict[tuple[str, ...], torch.fx.GraphModule] = {}

    def model_sqnr(kept: list[str]) -> float:
        made[tuple(kept)] = _convert(copy.deepcopy(exported), batches, keep_float=kept)
        return _sqnr_over(model, made[tuple(kept)], batches)

    kept = choose_float_layers(_sensitivity(model, exported, batches), model_sqnr, bar)
    if tuple(kept) not in made:
        made[tuple(kept)] = _convert(copy.deepcopy(exported), batches, keep_float=kept)
    return made[tuple(kept)], kept
