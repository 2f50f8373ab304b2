"""A correct attempt at kata 9 from blind round 1 (katas/09_int8_quantization/hidden/blind_rounds.md), written from
the lesson alone, with in-place relu_/add_ added when the lesson made them patterns.

- annotate: walks the graph once; a relu rides only when it is its linear's one reader (the output node counts);
  `z + z` is annotated once.
- quantize_for_npu: Dim.DYNAMIC (not AUTO) on dimension 0 of every input; the calibration iterable is read once.
- lower: anchored at each int8 quantize_per_tensor and walked backwards (q <- [relu <-] linear, q <- add); every
  guard is checked and every pattern collected before any is rewritten.
- sqnr: 20 * log10 of the ratio of norms, in float64.
- The sensitivity step goes through quantize_for_npu for every measurement (an export each), takes one sqnr
  of all outputs concatenated, and grows the kept list one layer at a time from the empty one.
"""
from __future__ import annotations

import math
from typing import Iterable

import torch
import torch.fx

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

ACT = QuantizationSpec(dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_tensor_affine,
                       is_dynamic=False, observer_or_fake_quant_ctr=MinMaxObserver)
WEIGHT = QuantizationSpec(dtype=torch.int8, quant_min=-127, quant_max=127, qscheme=torch.per_channel_symmetric,
                          ch_axis=0, is_dynamic=False, observer_or_fake_quant_ctr=PerChannelMinMaxObserver)

LINEARS = (aten.linear.default,)
RELUS = (aten.relu.default, aten.relu_.default)
ADDS = (aten.add.Tensor, aten.add_.Tensor)


def _sole_relu(node: torch.fx.Node):
    """The relu that is `node`'s one and only reader (output node included), or None."""
    if len(node.users) != 1:
        return None
    (user,) = node.users
    if user.op == "call_function" and user.target in RELUS and user.args[0] is node:
        return user
    return None


class NPUQuantizer(Quantizer):
    def __init__(self, keep_float: Iterable[str] = ()) -> None:
        super().__init__()
        self.keep_float = set(keep_float)

    def annotate(self, model: torch.fx.GraphModule) -> torch.fx.GraphModule:
        for node in model.graph.nodes:
            if node.op != "call_function" or node.name in self.keep_float:
                continue
            if node.target in LINEARS:
                x, w = node.args[0], node.args[1]
                relu = _sole_relu(node)
                node.meta["quantization_annotation"] = QuantizationAnnotation(
                    input_qspec_map={x: ACT, w: WEIGHT},
                    output_qspec=None if relu is not None else ACT,
                    _annotated=True)
                if relu is not None:
                    relu.meta["quantization_annotation"] = QuantizationAnnotation(output_qspec=ACT,
                                                                                   _annotated=True)
            elif node.target in ADDS:
                a, b = node.args[0], node.args[1]
                if not (isinstance(a, torch.fx.Node) and isinstance(b, torch.fx.Node)):
                    continue
                if a is b:
                    qmap = {a: ACT}
                else:
                    qmap = {a: ACT, b: SharedQuantizationSpec((a, node))}
                node.meta["quantization_annotation"] = QuantizationAnnotation(
                    input_qspec_map=qmap, output_qspec=ACT, _annotated=True)
        return model

    def validate(self, model: torch.fx.GraphModule) -> None:
        """Nothing to check."""


def quantize_for_npu(model: torch.nn.Module, example_inputs: tuple,
                     calibration_batches: Iterable[tuple], keep_float: Iterable[str] = ()) -> torch.fx.GraphModule:
    model = model.eval()
    dims = tuple({0: torch.export.Dim.DYNAMIC} for _ in example_inputs)
    exported = torch.export.export(model, tuple(example_inputs), dynamic_shapes=dims)
    prepared = prepare_pt2e(exported.module(), NPUQuantizer(keep_float))
    with torch.no_grad():
        for batch in calibration_batches:
            prepared(*batch)
    return convert_pt2e(prepared)


# --- lowering ---------------------------------------------------------------------------------------------------
def _attr(gm: torch.fx.GraphModule, node) -> torch.Tensor | None:
    if isinstance(node, torch.fx.Node) and node.op == "get_attr":
        return torch.fx.graph_module._get_attr(gm, node.target)
    return None


def _int8_dq_tensor(node) -> bool:
    return (isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target is DEQUANTIZE_PER_TENSOR
            and node.args[5] == torch.int8 and isinstance(node.args[1], (int, float))
            and isinstance(node.args[2], int))


def _only_reader(node: torch.fx.Node, reader: torch.fx.Node) -> bool:
    return len(node.users) == 1 and reader in node.users


def _linear_pattern(gm, q, body):
    """q <- [relu <-] linear; the pattern's parts or None if a guard fails."""
    relu = None
    linear = body
    if body.target in RELUS:
        relu, linear = body, body.args[0]
        if not (isinstance(linear, torch.fx.Node) and linear.op == "call_function" and linear.target in LINEARS):
            return None
        if not _only_reader(linear, relu):
            return None
    if not _only_reader(relu if relu is not None else linear, q):
        return None
    if linear.kwargs:
        return None
    x_dq, w_dq = linear.args[0], linear.args[1]
    bias = linear.args[2] if len(linear.args) > 2 else None
    if not _int8_dq_tensor(x_dq):
        return None
    if not (isinstance(w_dq, torch.fx.Node) and w_dq.target is DEQUANTIZE_PER_CHANNEL):
        return None
    w_q_node, scales_node, zps_node, axis = w_dq.args[:4]
    w_dtype = w_dq.args[6] if len(w_dq.args) > 6 else w_dq.kwargs.get("dtype")
    w_q, scales, zps = _attr(gm, w_q_node), _attr(gm, scales_node), _attr(gm, zps_node)
    if w_q is None or scales is None or zps is None:
        return None
    if w_dtype != torch.int8 or w_q.dtype != torch.int8 or w_q.dim() != 2 or axis != 0:
        return None
    if tuple(scales.shape) != (w_q.shape[0],) or bool((zps != 0).any()):
        return None
    if bias is not None and not isinstance(bias, torch.fx.Node):
        return None
    return dict(kind="linear", q=q, relu=relu, linear=linear, x_dq=x_dq, w_dq=w_dq, bias=bias,
                scales_node=scales_node, scales=scales)


def _add_pattern(gm, q, add):
    if not _only_reader(add, q):
        return None
    if add.kwargs.get("alpha", 1) != 1 or len(add.args) != 2:
        return None
    a_dq, b_dq = add.args
    if not (_int8_dq_tensor(a_dq) and _int8_dq_tensor(b_dq)):
        return None
    if tuple(a_dq.args[1:3]) != tuple(b_dq.args[1:3]):
        return None
    return dict(kind="add", q=q, add=add, a_dq=a_dq, b_dq=b_dq)


def _find_patterns(gm: torch.fx.GraphModule):
    found = []
    for q in gm.graph.nodes:
        if q.op != "call_function" or q.target is not QUANTIZE_PER_TENSOR:
            continue
        if q.args[5] != torch.int8 or not isinstance(q.args[1], (int, float)) or not isinstance(q.args[2], int):
            continue
        body = q.args[0]
        if not (isinstance(body, torch.fx.Node) and body.op == "call_function"):
            continue
        if body.target in LINEARS or body.target in RELUS:
            pattern = _linear_pattern(gm, q, body)
        elif body.target in ADDS:
            pattern = _add_pattern(gm, q, body)
        else:
            pattern = None
        if pattern is not None:
            found.append(pattern)
    return found


def _drop_if_unread(graph: torch.fx.Graph, nodes):
    for node in nodes:
        if node is not None and isinstance(node, torch.fx.Node) and node.graph is graph and not node.users:
            graph.erase_node(node)


def lower_to_npu_int8(converted: torch.fx.GraphModule) -> torch.fx.GraphModule:
    gm = converted
    graph = gm.graph
    for p in _find_patterns(gm):
        q = p["q"]
        out_scale, out_zp = q.args[1], q.args[2]
        with graph.inserting_before(q):
            if p["kind"] == "linear":
                x_dq, w_dq = p["x_dq"], p["w_dq"]
                scales_node = p["scales_node"]
                if p["scales"].dtype != torch.float32:
                    scales_node = graph.call_method("to", (scales_node, torch.float32))
                new = graph.call_function(INT8_LINEAR, (
                    x_dq.args[0], x_dq.args[1], x_dq.args[2], w_dq.args[0], scales_node, p["bias"],
                    out_scale, out_zp, p["relu"] is not None))
                dead = [q, p["relu"], p["linear"], x_dq, w_dq]
            else:
                a_dq, b_dq = p["a_dq"], p["b_dq"]
                new = graph.call_function(INT8_ADD, (a_dq.args[0], b_dq.args[0], a_dq.args[1], a_dq.args[2],
                                                     out_scale, out_zp))
                dead = [q, p["add"], a_dq, b_dq]
        new.meta.update({k: v for k, v in q.meta.items() if k == "stack_trace"})
        q.replace_all_uses_with(new)
        _drop_if_unread(graph, dead)
    graph.lint()
    gm.recompile()
    return gm


def sqnr(reference: torch.Tensor, actual: torch.Tensor) -> float:
    ref = reference.detach().to(torch.float64)
    noise = torch.linalg.vector_norm(ref - actual.detach().to(torch.float64))
    if noise == 0:
        return float("inf")
    signal = torch.linalg.vector_norm(ref)
    if signal == 0:
        return float("-inf")
    return float(20.0 * math.log10(float(signal) / float(noise)))


# --- the sensitivity step: every layer through quantize_for_npu, one SQNR of everything --------------------------
def _layer_names(model, example_inputs) -> list[str]:
    dims = tuple({0: torch.export.Dim.DYNAMIC} for _ in example_inputs)
    graph = torch.export.export(model.eval(), tuple(example_inputs), dynamic_shapes=dims).module().graph
    return [n.name for n in graph.nodes if n.op == "call_function" and (
        n.target in LINEARS or (n.target in ADDS and all(isinstance(a, torch.fx.Node) for a in n.args[:2])))]


def _flat(outputs) -> torch.Tensor:
    return torch.cat([t.detach().reshape(-1).double() for out in outputs
                      for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)])


def _model_sqnr(model, example_inputs, batches, keep) -> float:
    quantized = quantize_for_npu(model, example_inputs, batches, keep_float=keep)
    with torch.no_grad():
        return sqnr(_flat([model(*b) for b in batches]), _flat([quantized(*b) for b in batches]))


def layer_sensitivity(model, example_inputs, calibration_batches):
    batches = list(calibration_batches)
    names = _layer_names(model, example_inputs)
    return [(name, _model_sqnr(model, example_inputs, batches, [n for n in names if n != name])) for name in names]


def choose_float_layers(sensitivity, model_sqnr, bar=20.0):
    order = sorted(range(len(sensitivity)), key=lambda i: (sensitivity[i][1], i))
    ranking = [sensitivity[i][0] for i in order]
    kept: list[str] = []
    for name in [None] + ranking:
        if name is not None:
            kept = kept + [name]
        if model_sqnr(kept) >= bar:
            return kept
    return kept


def quantize_with_sensitivity(model, example_inputs, calibration_batches, bar=20.0):
    batches = list(calibration_batches)
    kept = choose_float_layers(layer_sensitivity(model, example_inputs, batches),
                               lambda keep: _model_sqnr(model, example_inputs, batches, keep), bar)
    return quantize_for_npu(model, example_inputs, batches, keep_float=kept), kept
