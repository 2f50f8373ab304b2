"""A different correct attempt at kata 9, written without looking at the reference's internals.

- Activations are observed with HistogramObserver (which may clip outliers), weights per channel over the full
  [-128, 127]; a relu is matched from its own side, looking back at its linear; an add's inputs share the
  observer of its *second* input's edge.
- Export names its Dim; calibration runs under no_grad one batch at a time.
- The lowering walks back from every quantize node (q <- [relu] <- linear or q <- add) instead of forward from
  the ops, and removes what the rewrite left unread by walking the graph backwards.
- sqnr is 20 * log10 of a ratio of norms.
- The sensitivity step exports once and quantizes a deep copy per measurement, sums the powers batch by batch,
  and passes keep_float to the Quantizer as a set.
"""
from __future__ import annotations

import copy
import math

import torch
import torch.fx

from katas.common.npu.int8 import INT8_ADD, INT8_LINEAR
from katas.common.pt2e import (
    DEQUANTIZE_PER_CHANNEL,
    DEQUANTIZE_PER_TENSOR,
    QUANTIZE_PER_TENSOR,
    HistogramObserver,
    PerChannelMinMaxObserver,
    QuantizationAnnotation,
    QuantizationSpec,
    Quantizer,
    SharedQuantizationSpec,
    convert_pt2e,
    prepare_pt2e,
)

aten = torch.ops.aten
RELUS = (aten.relu.default, aten.relu_.default)  # in place or not: the same patterns
ADDS = (aten.add.Tensor, aten.add_.Tensor)


def _act() -> QuantizationSpec:
    return QuantizationSpec(dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_tensor_affine,
                            is_dynamic=False, observer_or_fake_quant_ctr=HistogramObserver)


def _weight() -> QuantizationSpec:
    return QuantizationSpec(dtype=torch.int8, quant_min=-128, quant_max=127, qscheme=torch.per_channel_symmetric,
                            ch_axis=0, is_dynamic=False, observer_or_fake_quant_ctr=PerChannelMinMaxObserver)


class NPUQuantizer(Quantizer):
    def __init__(self, keep_float=()):
        super().__init__()
        self.kept = tuple(keep_float)

    def annotate(self, model):
        riders = set()
        for node in model.graph.nodes:  # relus first: a relu decides whether its linear carries the output
            if node.op == "call_function" and node.target in RELUS:
                source = node.args[0]
                if (isinstance(source, torch.fx.Node) and source.target == aten.linear.default
                        and len(source.users) == 1 and source.name not in self.kept):
                    node.meta["quantization_annotation"] = QuantizationAnnotation(output_qspec=_act(),
                                                                                  _annotated=True)
                    riders.add(source)
        for node in model.graph.nodes:
            if node.op != "call_function" or node.name in self.kept:
                continue
            if node.target == aten.linear.default:
                x, w = node.args[0], node.args[1]
                node.meta["quantization_annotation"] = QuantizationAnnotation(
                    input_qspec_map={x: _act(), w: _weight()},
                    output_qspec=None if node in riders else _act(), _annotated=True)
            elif node.target in ADDS:
                a, b = node.args[0], node.args[1]
                if not (isinstance(a, torch.fx.Node) and isinstance(b, torch.fx.Node)):
                    continue
                qmap = {b: _act()} if a is b else {b: _act(), a: SharedQuantizationSpec((b, node))}
                node.meta["quantization_annotation"] = QuantizationAnnotation(input_qspec_map=qmap,
                                                                              output_qspec=_act(), _annotated=True)
        return model

    def validate(self, model):
        return None


def _exported(model, example_inputs):
    batch = torch.export.Dim("batch")
    return torch.export.export(model.eval(), tuple(example_inputs),
                               dynamic_shapes=[{0: batch} for _ in example_inputs]).module()


def _calibrated(graph_module, calibration_batches, keep_float=()):
    prepared = prepare_pt2e(graph_module, NPUQuantizer(keep_float))
    for inputs in calibration_batches:
        with torch.no_grad():
            prepared(*inputs)
    return convert_pt2e(prepared)


def quantize_for_npu(model, example_inputs, calibration_batches, keep_float=()):
    return _calibrated(_exported(model, example_inputs), calibration_batches, keep_float)


def _dq_params(node):
    if isinstance(node, torch.fx.Node) and node.target == DEQUANTIZE_PER_TENSOR and node.args[5] == torch.int8:
        return node.args[1], node.args[2]
    return None


def _get(gm, node):
    owner = gm
    for part in node.target.split("."):
        owner = getattr(owner, part)
    return owner


def _linear_call(gm, q, linear, relu):
    x_dq, w_dq = linear.args[0], linear.args[1]
    bias = linear.args[2] if len(linear.args) > 2 else None
    xp = _dq_params(x_dq)
    if xp is None or not isinstance(w_dq, torch.fx.Node) or w_dq.target != DEQUANTIZE_PER_CHANNEL:
        return None
    if w_dq.args[3] != 0 or w_dq.args[6] != torch.int8 or torch.count_nonzero(_get(gm, w_dq.args[2])) > 0:
        return None
    scale_name = f"{linear.name}_weight_scale"
    gm.register_buffer(scale_name, _get(gm, w_dq.args[1]).detach().float().clone())
    with gm.graph.inserting_before(q):
        scale = gm.graph.get_attr(scale_name)
        return gm.graph.call_function(INT8_LINEAR, (x_dq.args[0], xp[0], xp[1], w_dq.args[0], scale, bias,
                                                    q.args[1], q.args[2], relu is not None))


def _add_call(gm, q, add):
    a, b = add.args[0], add.args[1]
    ap, bp = _dq_params(a), _dq_params(b)
    if ap is None or ap != bp or add.kwargs:
        return None
    with gm.graph.inserting_before(q):
        return gm.graph.call_function(INT8_ADD, (a.args[0], b.args[0], ap[0], ap[1], q.args[1], q.args[2]))


def lower_to_npu_int8(converted):
    gm = converted
    for q in [n for n in gm.graph.nodes if n.target == QUANTIZE_PER_TENSOR]:
        source = q.args[0]
        if not isinstance(source, torch.fx.Node) or q.args[5] != torch.int8 or len(source.users) != 1:
            continue
        replacement = None
        if source.target in RELUS:
            linear = source.args[0]
            if isinstance(linear, torch.fx.Node) and linear.target == aten.linear.default and len(linear.users) == 1:
                replacement = _linear_call(gm, q, linear, source)
        elif source.target == aten.linear.default:
            replacement = _linear_call(gm, q, source, None)
        elif source.target in ADDS:
            replacement = _add_call(gm, q, source)
        if replacement is not None:
            q.replace_all_uses_with(replacement)
    for node in reversed(list(gm.graph.nodes)):
        if node.op == "call_function" and not node.users and node.target in (
                QUANTIZE_PER_TENSOR, DEQUANTIZE_PER_TENSOR, DEQUANTIZE_PER_CHANNEL, *RELUS, aten.linear.default,
                *ADDS):
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


def sqnr(reference, actual):
    noise = torch.linalg.vector_norm(reference.double() - actual.double())  # both in float64 before subtracting
    if noise == 0:
        return math.inf
    return float(20 * torch.log10(torch.linalg.vector_norm(reference.double()) / noise))


# --- the sensitivity step: one export, a copy per measurement, powers summed batch by batch ------------------------
def _powers(model, quantized, batches):
    signal = noise = 0.0
    with torch.no_grad():
        for inputs in batches:
            want = [t for t in torch.utils._pytree.tree_leaves(model(*inputs)) if isinstance(t, torch.Tensor)]
            got = [t for t in torch.utils._pytree.tree_leaves(quantized(*inputs)) if isinstance(t, torch.Tensor)]
            for w, g in zip(want, got):
                signal += float(w.double().pow(2).sum())
                noise += float((w.double() - g.double()).pow(2).sum())
    return math.inf if noise == 0 else 20 * math.log10(math.sqrt(signal) / math.sqrt(noise))


def _layers(graph_module):
    return [n.name for n in graph_module.graph.nodes if n.op == "call_function" and (
        n.target == aten.linear.default
        or (n.target in ADDS and isinstance(n.args[0], torch.fx.Node) and isinstance(n.args[1], torch.fx.Node)))]


def _measure(model, graph_module, batches, keep):
    return _powers(model, _calibrated(copy.deepcopy(graph_module), batches, keep), batches)


def layer_sensitivity(model, example_inputs, calibration_batches):
    batches = [tuple(b) for b in calibration_batches]
    graph_module = _exported(model, example_inputs)
    layers = _layers(graph_module)
    return [(layer, _measure(model, graph_module, batches, set(layers) - {layer})) for layer in layers]


def choose_float_layers(sensitivity, model_sqnr, bar=20.0):
    ranked = sorted(sensitivity, key=lambda pair: pair[1])
    for count in range(len(ranked) + 1):
        kept = [name for name, _ in ranked[:count]]
        if model_sqnr(kept) >= bar:
            return kept
    return [name for name, _ in ranked]


def quantize_with_sensitivity(model, example_inputs, calibration_batches, bar=20.0):
    batches = [tuple(b) for b in calibration_batches]
    kept = choose_float_layers(layer_sensitivity(model, example_inputs, batches),
                               lambda keep: _measure(model, _exported(model, example_inputs), batches, keep), bar)
    return quantize_for_npu(model, example_inputs, batches, keep_float=kept), kept
