"""A correct attempt at kata 9 from blind round 2 (katas/09_int8_quantization/hidden/blind_rounds.md, correct_symact),
written from the lesson alone.

- annotate: a table of pattern rules; activations per_tensor_symmetric (zero point 0, which the lesson allows);
  weights per channel over the full [-128, 127]; adds with an alpha annotated too (the lesson leaves it open).
- quantize_for_npu: Dim.DYNAMIC on dimension 0 of every input.
- lower: matched backwards, from every int8 per-tensor quantize to what produced its input.
- sqnr: through float64 vector norms (20 * log10 of the norm ratio).
- The sensitivity step reads the layers off a graph its own Quantizer annotated, and counts up to the first
  start of the ranking that reaches the bar with a while loop.
"""
from __future__ import annotations

import math
from typing import Iterable

import torch
import torch.fx
from torch.fx.graph_module import _get_attr

from katas.common.npu import NPU_INT8_OPS  # noqa: F401
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
LINEARS = {aten.linear.default}
RELUS = {aten.relu.default, aten.relu_.default}
ADDS = {aten.add.Tensor, aten.add_.Tensor}


def _activation_spec() -> QuantizationSpec:
    return QuantizationSpec(dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_tensor_symmetric,
                            is_dynamic=False, observer_or_fake_quant_ctr=MinMaxObserver)


def _weight_spec() -> QuantizationSpec:
    return QuantizationSpec(dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_channel_symmetric,
                            ch_axis=0, is_dynamic=False, observer_or_fake_quant_ctr=PerChannelMinMaxObserver)


# --- Step 1 ------------------------------------------------------------------------------------------------------
class NPUQuantizer(Quantizer):
    def __init__(self, keep_float: Iterable[str] = ()) -> None:
        super().__init__()
        self.keep_float = list(keep_float)

    def annotate(self, model: torch.fx.GraphModule) -> torch.fx.GraphModule:
        act, weight = _activation_spec(), _weight_spec()
        for node in list(model.graph.nodes):
            if node.op != "call_function" or node.name in self.keep_float:
                continue
            if node.target in LINEARS:
                x, w = node.args[0], node.args[1]
                users = list(node.users)
                fused_relu = users[0] if len(users) == 1 and users[0].target in RELUS else None
                node.meta["quantization_annotation"] = QuantizationAnnotation(
                    input_qspec_map={x: act, w: weight},
                    output_qspec=None if fused_relu is not None else act,
                    _annotated=True)
                if fused_relu is not None:
                    fused_relu.meta["quantization_annotation"] = QuantizationAnnotation(
                        input_qspec_map={}, output_qspec=act, _annotated=True)
            elif node.target in ADDS:
                a, b = node.args[0], node.args[1]
                if not (isinstance(a, torch.fx.Node) and isinstance(b, torch.fx.Node)):
                    continue
                qmap = {a: act} if a is b else {a: act, b: SharedQuantizationSpec((a, node))}
                node.meta["quantization_annotation"] = QuantizationAnnotation(
                    input_qspec_map=qmap, output_qspec=act, _annotated=True)
        return model

    def validate(self, model: torch.fx.GraphModule) -> None:
        pass


# --- Step 2 ------------------------------------------------------------------------------------------------------
def quantize_for_npu(model: torch.nn.Module, example_inputs: tuple, calibration_batches: Iterable[tuple],
                     *, keep_float: Iterable[str] = ()) -> torch.fx.GraphModule:
    example_inputs = tuple(example_inputs)
    batch = torch.export.Dim.DYNAMIC
    shapes = tuple({0: batch} for _ in example_inputs)
    exported = torch.export.export(model.eval(), example_inputs, dynamic_shapes=shapes)
    prepared = prepare_pt2e(exported.module(), NPUQuantizer(keep_float))
    with torch.no_grad():
        for inputs in calibration_batches:
            prepared(*inputs)
    return convert_pt2e(prepared)


# --- Step 3 ------------------------------------------------------------------------------------------------------
def _is(node, target) -> bool:
    return isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target is target


def _int8_dq_tensor(node) -> bool:
    return _is(node, DEQUANTIZE_PER_TENSOR) and node.args[5] is torch.int8


def _qparams(node):
    return node.args[1], node.args[2]


def _weight_ok(gm, w_dq) -> bool:
    if not _is(w_dq, DEQUANTIZE_PER_CHANNEL):
        return False
    w_q, scales, zps, axis, _qmin, _qmax, dtype = w_dq.args[:7]
    if dtype is not torch.int8 or axis != 0:
        return False
    if not all(isinstance(n, torch.fx.Node) and n.op == "get_attr" for n in (w_q, scales, zps)):
        return False
    w = _get_attr(gm, w_q.target)
    s = _get_attr(gm, scales.target)
    z = _get_attr(gm, zps.target)
    return (w.dtype == torch.int8 and w.dim() == 2 and tuple(s.shape) == (w.shape[0],)
            and tuple(z.shape) == (w.shape[0],) and not bool(z.any()))


def _float32_scales(gm, scales_node):
    value = _get_attr(gm, scales_node.target)
    if value.dtype == torch.float32:
        return scales_node
    name = f"{scales_node.target.replace('.', '_')}_f32"
    gm.register_buffer(name, value.to(torch.float32))
    with gm.graph.inserting_after(scales_node):
        return gm.graph.get_attr(name)


def _erase_if_unused(gm, nodes) -> None:
    for n in dict.fromkeys(nodes):
        if isinstance(n, torch.fx.Node) and n.graph is gm.graph and not n.users:
            gm.graph.erase_node(n)


def _try_linear(gm, q, producer) -> bool:
    relu = None
    if producer.target in RELUS:
        relu, linear = producer, producer.args[0]
        if not (isinstance(linear, torch.fx.Node) and linear.op == "call_function" and linear.target in LINEARS):
            return False
        if len(linear.users) != 1:
            return False
    else:
        linear = producer
    if len(producer.users) != 1:
        return False
    x_dq, w_dq = linear.args[0], linear.args[1]
    bias = linear.args[2] if len(linear.args) > 2 else linear.kwargs.get("bias")
    if not _int8_dq_tensor(x_dq) or not _weight_ok(gm, w_dq):
        return False
    x_scale, x_zp = _qparams(x_dq)
    out_scale, out_zp = _qparams(q)
    with gm.graph.inserting_before(q):
        scales = _float32_scales(gm, w_dq.args[1])
        new = gm.graph.call_function(INT8_LINEAR, (x_dq.args[0], x_scale, x_zp, w_dq.args[0], scales, bias,
                                                   out_scale, out_zp, relu is not None))
    q.replace_all_uses_with(new)
    _erase_if_unused(gm, [q, relu, linear, x_dq, w_dq])
    return True


def _try_add(gm, q, add) -> bool:
    if len(add.users) != 1 or len(add.args) < 2:
        return False
    alpha = add.kwargs.get("alpha", add.args[2] if len(add.args) > 2 else 1)
    if alpha != 1:
        return False
    a_dq, b_dq = add.args[0], add.args[1]
    if not (_int8_dq_tensor(a_dq) and _int8_dq_tensor(b_dq)):
        return False
    if _qparams(a_dq) != _qparams(b_dq):
        return False
    scale, zp = _qparams(a_dq)
    out_scale, out_zp = _qparams(q)
    with gm.graph.inserting_before(q):
        new = gm.graph.call_function(INT8_ADD, (a_dq.args[0], b_dq.args[0], scale, zp, out_scale, out_zp))
    q.replace_all_uses_with(new)
    _erase_if_unused(gm, [q, add, a_dq, b_dq])
    return True


def lower_to_npu_int8(converted: torch.fx.GraphModule) -> torch.fx.GraphModule:
    gm = converted
    ends = [n for n in gm.graph.nodes if _is(n, QUANTIZE_PER_TENSOR) and n.args[5] is torch.int8]
    for q in ends:
        producer = q.args[0]
        if not (isinstance(producer, torch.fx.Node) and producer.op == "call_function"):
            continue
        if producer.target in LINEARS or producer.target in RELUS:
            _try_linear(gm, q, producer)
        elif producer.target in ADDS:
            _try_add(gm, q, producer)
    gm.graph.lint()
    gm.recompile()
    return gm


# --- Step 4 ------------------------------------------------------------------------------------------------------
def sqnr(reference: torch.Tensor, actual: torch.Tensor) -> float:
    ref = reference.detach().to(torch.float64)
    act = actual.detach().to(torch.float64)
    noise = torch.linalg.vector_norm(ref - act).item()
    if noise == 0.0:
        return float("inf")
    signal = torch.linalg.vector_norm(ref).item()
    if signal == 0.0:
        return float("-inf")
    return 20.0 * math.log10(signal / noise)


# --- Step 5 ------------------------------------------------------------------------------------------------------
def _int8_layers(model: torch.nn.Module, example_inputs: tuple) -> list[str]:
    """The nodes NPUQuantizer annotates, read off a graph it annotated."""
    shapes = tuple({0: torch.export.Dim.DYNAMIC} for _ in example_inputs)
    gm = torch.export.export(model.eval(), tuple(example_inputs), dynamic_shapes=shapes).module()
    NPUQuantizer().annotate(gm)
    return [n.name for n in gm.graph.nodes if "quantization_annotation" in n.meta and n.target not in RELUS]


def _whole_sqnr(model, quantized, batches) -> float:
    with torch.no_grad():
        pairs = [(r, a) for b in batches for r, a in zip(torch.utils._pytree.tree_leaves(model(*b)),
                                                         torch.utils._pytree.tree_leaves(quantized(*b)))]
    return sqnr(torch.cat([r.flatten() for r, _ in pairs]), torch.cat([a.flatten() for _, a in pairs]))


def layer_sensitivity(model, example_inputs, calibration_batches):
    batches = list(calibration_batches)
    layers = _int8_layers(model, example_inputs)
    result = []
    for layer in layers:
        others = [other for other in layers if other != layer]
        result.append((layer, _whole_sqnr(model, quantize_for_npu(model, example_inputs, batches,
                                                                  keep_float=others), batches)))
    return result


def choose_float_layers(sensitivity, model_sqnr, bar=20.0):
    ranking = [name for name, _ in sorted(sensitivity, key=lambda item: item[1])]
    count = 0
    while count < len(ranking) and model_sqnr(ranking[:count]) < bar:
        count += 1
    return ranking[:count]


def quantize_with_sensitivity(model, example_inputs, calibration_batches, bar=20.0):
    batches = list(calibration_batches)
    made = {}

    def model_sqnr(kept):
        made[tuple(kept)] = quantize_for_npu(model, example_inputs, batches, keep_float=kept)
        return _whole_sqnr(model, made[tuple(kept)], batches)

    kept = choose_float_layers(layer_sensitivity(model, example_inputs, batches), model_sqnr, bar)
    if tuple(kept) not in made:
        made[tuple(kept)] = quantize_for_npu(model, example_inputs, batches, keep_float=kept)
    return made[tuple(kept)], kept
