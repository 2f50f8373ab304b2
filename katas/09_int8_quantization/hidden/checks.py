"""Hidden checks for kata 9 (PT2E quantization for the int8 NPU: a Quantizer, calibration, lowering dq -> op -> q
patterns to int8 ops, SQNR). Learners: solve the kata from README.md, not from here.

The attempt's code runs in the worker (probes.py) and returns data. Every right answer comes from this process:
the rules of what the int8 unit runs (applied to annotation descriptions), eager outputs, the outputs of the
spec's own quantized graphs (probes.spec_converted, rebuilt here), and the NPU's counters (the worker's DEVICE is
a client of the one here). Numbers are compared by SQNR, not at float tolerances: int8 is meant to differ from
float. Structure is checked beside every number: a lowering that lowers nothing matches the quantized graph
perfectly. Nothing is compared with the reference.
"""
from __future__ import annotations

import math
from pathlib import Path

import torch

from checker.kit import load_module
from checker.kit import CheckFailed, Checks, _attempt_location, expect, fuzz
from katas.common.models import describe
import katas.common.npu.int8  # noqa: F401 - registers the int8 ops, so the device here can rebuild their programs
from katas.common.npu import DEVICE, DeviceService
from katas.common.strategies import int8_programs, sqnr_pairs

_HIDDEN = Path(__file__).parent
probes = load_module(_HIDDEN / "probes.py", "kata09_int8_quantization_probes")
ZOO = probes.ZOO

CHECKS = Checks()
CHECKS.services.update(DeviceService().handlers())
CHECKS.worker_setup.append("katas.common.npu:connect_to_device_service")

QUANTIZED_MIN_SQNR = 20.0  # dB, quantized model against eager: int8 done right keeps 25-40 dB on these models
LOWERED_MIN_SQNR = 30.0  # dB, lowered graph against the quantized graph it came from: the same int8 arithmetic
ACTIVATION_SCHEMES = ("per_tensor_affine", "per_tensor_symmetric")
INT8_TARGETS = (probes.INT8_LINEAR, probes.INT8_ADD)
QDQ_PREFIX = "quantized_decomposed."
QUANTIZE = QDQ_PREFIX + "quantize_per_tensor.default"
DEQUANTIZE = QDQ_PREFIX + "dequantize_per_tensor.default"
DEQUANTIZE_PER_CHANNEL = QDQ_PREFIX + "dequantize_per_channel.default"
RELU_TARGETS = ("aten.relu.default", "aten.relu_.default")  # the in-place forms are the same patterns
ADD_TARGETS = ("aten.add.Tensor", "aten.add_.Tensor")
SQNR_TOLERANCE_DB = 0.1


def model_text(recipe) -> str:
    if isinstance(recipe, str):
        return f"`{recipe}` ({ZOO[recipe].text})"
    if probes.is_program(recipe):
        return "the model\n" + probes.describe_program(recipe) + "\n"
    if probes.is_chain(recipe):
        return "the model\n" + probes.describe_chain(recipe) + "\n"
    if probes.is_real(recipe):
        return f"transformers' {recipe[1]} (katas/common/real_models.py)"
    return describe(recipe)


def sqnr(reference: torch.Tensor, actual: torch.Tensor) -> float:
    """The checks' own SQNR in dB (the lesson's definition)."""
    reference, actual = reference.double(), actual.double()
    noise = float((reference - actual).pow(2).sum())
    signal = float(reference.pow(2).sum())
    if noise == 0:
        return math.inf
    return 10 * math.log10(signal / noise) if signal > 0 else -math.inf


def _leaves(value) -> list[torch.Tensor]:
    return [v for v in torch.utils._pytree.tree_leaves(value) if isinstance(v, torch.Tensor)]


def worst_sqnr(want: dict, got: dict, *, recipe, what: str, against: str) -> float:
    """The lowest SQNR over every batch and output; CheckFailed naming the batch if `got` failed or is misshapen."""
    worst = math.inf
    for batch in sorted(want):
        out = got.get(batch)
        if isinstance(out, str):
            hint = ("\nThe graph was exported for the example's batch size only: export with dimension 0 of every "
                    "input dynamic (dynamic_shapes, one entry per input). README.md, 'Step 2'."
                    if "Guard failed" in out and "size()[0]" in out else "")
            raise CheckFailed(f"{what} failed on a batch of size {batch} of {model_text(recipe)}:\n  {out[:500]}{hint}")
        mine, theirs = _leaves(out), _leaves(want[batch])
        expect(len(mine) == len(theirs) and all(a.shape == b.shape for a, b in zip(mine, theirs)),
               f"{what} returned {[tuple(t.shape) for t in mine]} for a batch of {batch} rows of {model_text(recipe)}; "
               f"{against} returns {[tuple(t.shape) for t in theirs]}.")
        for a, b in zip(theirs, mine):
            worst = min(worst, sqnr(a, b.to(a.dtype)))
    return worst


def probe_quantizing(ctx, probe, recipe, *args, brief: bool = False) -> dict:
    """ctx.probe(probe, recipe, *args) for a probe that calls quantize_for_npu; a shape guard failing inside it (the
    calibration batches have another batch size than the example) is named as the rule it breaks. `brief`: the
    model is described below the message (fuzz)."""
    try:
        return ctx.probe(probe, recipe, *args)
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - a batch exported static is named as such; anything else is reported as is
        text = str(exc).strip()
        if "Guard failed" not in text or ".size()[0]" not in text:
            raise
        name = getattr(exc, "remote_type", None) or type(exc).__name__
        first = (text.splitlines() or [""])[0][:300]
        inputs = probes.inputs_of(recipe)
        raise CheckFailed(
            f"your code raised {name}{_attempt_location(ctx, exc)}: {first}\n"
            f"quantize_for_npu on {'the model below' if brief else model_text(recipe)}: the example "
            f"input{'s have' if inputs > 1 else ' has'} "
            f"{probes.EXAMPLE_BATCH} rows, the calibration batches {probes.CALIBRATION_ROWS}, and the graph was "
            f"exported with dimension 0 fixed to the example's size on "
            + ("an input: every input's batch must be dynamic. The model takes " + str(inputs) + " inputs, and "
               "dimension 0 of each is the batch: dynamic_shapes needs an entry for every input (e.g. {0: "
               "Dim(\"batch\")} for each), not only the first. " if inputs > 1 else
               "its input: the batch must be dynamic (dynamic_shapes=({0: Dim(\"batch\")},), one entry per "
               "input). ")
            + "README.md, 'Step 2'.") from None


def expect_close_to_eager(recipe, got: dict, *, what: str, hint: str) -> float:
    worst = worst_sqnr(probes.eager(recipe), got, recipe=recipe, what=what, against="the eager model")
    expect(worst >= QUANTIZED_MIN_SQNR,
           f"{what} of {model_text(recipe)} is {worst:.1f} dB from the eager model (SQNR); int8 done right keeps "
           f"at least {QUANTIZED_MIN_SQNR:.0f} dB here. {hint}")
    return worst


def count(nodes: list[dict], target: str) -> int:
    return sum(1 for n in nodes if n["target"] == target)


def ops_text(nodes: list[dict]) -> str:
    names = [n["target"].removeprefix("aten.").removeprefix(QDQ_PREFIX).removesuffix(".default") for n in nodes]
    return ", ".join(names)


# --- Step 1: the Quantizer ---------------------------------------------------------------------------------------

def _annotated(ctx, recipe) -> list[dict]:
    return ctx.probe(probes.annotated, recipe)


def _spec_text(spec: dict | None) -> str:
    if spec is None:
        return "nothing"
    if spec["kind"] != "spec":
        return spec["kind"]
    axis = f", ch_axis={spec['ch_axis']}" if spec["qscheme"] and "channel" in spec["qscheme"] else ""
    return f"{spec['dtype']} {spec['qscheme']} [{spec['quant_min']}, {spec['quant_max']}]{axis}"


def activation_problem(spec: dict | None) -> str | None:
    """Why `spec` is not an activation spec the int8 unit takes (int8, one scale per tensor, static), or None."""
    if spec is None:
        return "it is not annotated"
    if spec["kind"] == "shared":
        return None
    if spec["kind"] != "spec":
        return f"it is a {spec['kind']}"
    if spec["dtype"] != "int8" or spec["qscheme"] not in ACTIVATION_SCHEMES or spec["dynamic"]:
        return f"it is {_spec_text(spec)}{' (dynamic)' if spec['dynamic'] else ''}"
    if not (-128 <= (spec["quant_min"] if spec["quant_min"] is not None else -128)
            and (spec["quant_max"] if spec["quant_max"] is not None else 127) <= 127):
        return f"its range [{spec['quant_min']}, {spec['quant_max']}] is wider than int8's"
    return None


def weight_problem(spec: dict | None) -> str | None:
    """Why `spec` is not the int8 unit's weight format (int8, symmetric, one scale per output channel), or None."""
    if spec is None:
        return "it is not annotated"
    if spec["kind"] != "spec":
        return f"it is a {spec['kind']}"
    if spec["dtype"] != "int8" or spec["qscheme"] != "per_channel_symmetric" or spec["ch_axis"] != 0:
        return f"it is {_spec_text(spec)}"
    return None


def fused_relu(node: dict, by_name: dict) -> dict | None:
    """The relu the int8 linear applies itself: the linear's only user."""
    if len(node["users"]) == 1 and by_name.get(node["users"][0], {}).get("target") in RELU_TARGETS:
        return by_name[node["users"][0]]
    return None


@CHECKS.check(stage="annotate", weight=3)
def quantizer_annotates_linears_and_adds(ctx):
    "NPUQuantizer annotates every linear (int8 activations, per-channel symmetric weights) and every tensor add"
    for recipe in ("mlp", "residual", "reused_linear", "no_bias", "doubled", "two_inputs"):
        nodes = _annotated(ctx, recipe)
        by_name = {n["name"]: n for n in nodes}
        for node in nodes:
            where = f"node {node['name']} ({node['target']}) of {model_text(recipe)}"
            if node["target"] == "aten.linear.default":
                why = activation_problem(node["inputs"].get("0"))
                expect(why is None, f"the input of {where}: {why}. The int8 unit reads int8 activations with one "
                                    f"scale per tensor: annotate input 0 with an int8 per_tensor_affine "
                                    f"QuantizationSpec. README.md, 'Step 1'.")
                why = weight_problem(node["inputs"].get("1"))
                expect(why is None, f"the weight of {where}: {why}. The int8 unit's weights are int8, symmetric "
                                    f"(zero point 0) and have one scale per output channel: qscheme "
                                    f"torch.per_channel_symmetric, ch_axis=0. README.md, 'Per channel'.")
                expect("2" not in node["inputs"],
                       f"the bias of {where} is annotated ({_spec_text(node['inputs'].get('2'))}). Leave it float: "
                       f"the int8 linear takes a float32 bias and rounds it to int32 at x_scale * weight_scale, a "
                       f"step far finer than an int8 code's. README.md, 'Step 1'.")
                if fused_relu(node, by_name) is None:
                    why = activation_problem(node["output"])
                    expect(why is None, f"the output of {where}: {why}. Its users are "
                                        f"{', '.join(node['users'])}: the int8 linear writes int8, so its output "
                                        f"is quantized unless a relu rides on it. README.md, 'Step 1'.")
            elif node["target"] in ADD_TARGETS and node["tensor_args"][:2] == [True, True]:
                for position in ("0", "1"):  # `z + z` reads one node twice: one annotation covers both
                    spec = node["inputs"].get(position)
                    why = activation_problem(spec)
                    expect(why is None, f"input {position} of {where}: {why}. The int8 add reads two int8 tensors"
                                        + (": here both are one node (z + z), still an add of two tensors, so "
                                           "annotate its one input once, with the activation spec"
                                           if node["args_same"] else "")
                                        + ". README.md, 'The add'.")
                    expect(spec["kind"] != "shared" or spec.get("edge") != [spec.get("source"), node["name"]],
                           f"input {position} of {where} is annotated with SharedQuantizationSpec(({spec.get('source')}, "
                           f"{node['name']})): the edge it is on, shared with itself, so no observer is ever made "
                           f"for it (prepare_pt2e recurses until Python gives up). "
                           + ("Its two inputs are one node (z + z): there is one input, so annotate it once, with "
                              "the activation spec. " if node["args_same"] else
                              "Give the first input the activation spec and share the second with it. ")
                           + "README.md, 'The add'.")
                why = activation_problem(node["output"])
                expect(why is None, f"the output of {where}: {why}. README.md, 'The add'.")


def runs_int8(node: dict) -> bool:
    """The lesson's table: a linear, or an add of two tensors, in place or not (a relu is judged with its linear;
    an add with an alpha may be annotated or not)."""
    return node["target"] == "aten.linear.default" or (
        node["target"] in ADD_TARGETS and node["tensor_args"][:2] == [True, True])


@CHECKS.check(stage="annotate", weight=2)
def quantizer_annotates_nothing_the_int8_unit_cannot_run(ctx):
    "NPUQuantizer leaves gelu, layer_norm, sigmoid, mul and the add of a number unannotated"
    for recipe in ("gelu_norm", "gated", "residual"):
        for node in _annotated(ctx, recipe):
            if not node["annotated"] or runs_int8(node) or node["target"] in RELU_TARGETS:
                continue
            op = node["target"].removeprefix("aten.").removesuffix(".default")
            why = ("the add of a number is not the int8 add of two tensors"
                   if node["target"] in ADD_TARGETS else f"{op} runs in float")
            raise CheckFailed(
                f"NPUQuantizer annotated node {node['name']} ({node['target']}) of {model_text(recipe)}. The int8 "
                f"unit runs linear (with a relu after it) and the add of two tensors, nothing else: {why}, so "
                f"quantizing around it only adds rounding error. NPU_OPS is the float table; the int8 table is "
                f"NPU_INT8_OPS. README.md, 'What the int8 unit runs'.")


@CHECKS.check(stage="annotate", weight=2)
def relu_rides_on_its_linear(ctx):
    "a relu that is its linear's only user is annotated with the linear: one int8 op; a linear with two users is not"
    # the relu right after its linear, and (DELAYED_RELUS) other nodes between them in graph order
    for recipe in ("mlp", "residual", "reused_linear", "two_inputs", *probes.DELAYED_RELUS):
        nodes = _annotated(ctx, recipe)
        by_name = {n["name"]: n for n in nodes}
        order = {n["name"]: i for i, n in enumerate(nodes)}
        for node in nodes:
            if node["target"] != "aten.linear.default":
                continue
            relu = fused_relu(node, by_name)
            where = f"node {node['name']} of {model_text(recipe)}"
            if relu is not None:
                gap = order[relu["name"]] - order[node["name"]] - 1
                between = (f" Here {gap} node(s) sit between the linear and its relu in the graph (export keeps the "
                           f"forward's order): find the relu among the linear's users (node.users), wherever it is, "
                           f"not as the next node." if gap else "")
                expect(node["output"] is None and not relu["inputs"] and activation_problem(relu["output"]) is None,
                       f"{where} feeds only {relu['name']} (relu), yet the linear's output is annotated with "
                       f"{_spec_text(node['output'])}, the relu's input with "
                       f"{_spec_text(relu['inputs'].get('0'))} and the relu's output with "
                       f"{_spec_text(relu['output'])}. Annotate the pair as one pattern: the linear's inputs, and the "
                       f"output on the relu, nothing between them. Then no quantize sits between them and the int8 "
                       f"linear applies the relu itself.{between}"
                       + (f" The relu's own readers ({len(relu['users'])} here) do not matter: only the linear "
                          f"must have one user." if len(relu["users"]) > 1 else "")
                       + " README.md, 'Patterns'.")
            else:
                users = [by_name.get(u, {"target": u})["target"] for u in node["users"]]
                expect(activation_problem(node["output"]) is None,
                       f"{where} has {len(node['users'])} users ({', '.join(users)}); its output must be quantized "
                       f"on its own, but it is annotated with {_spec_text(node['output'])}. A relu may ride on a "
                       f"linear only when it is the linear's only user (kata 3's single-user guard). "
                       f"README.md, 'Patterns'.")
                for user in node["users"]:
                    if by_name.get(user, {}).get("target") in RELU_TARGETS:
                        expect(by_name[user]["annotated"] is False,
                               f"{where} has {len(node['users'])} users, but the relu after it ({user}) is annotated: "
                               f"a relu alone has no int8 kernel, and this one cannot ride on its linear. "
                               f"README.md, 'Patterns'.")


# --- Step 2: prepare, calibrate, convert ------------------------------------------------------------------------

def _quantized(ctx, recipe, calibration_scale: float | tuple = probes.INPUT_SCALE) -> dict:
    seen = probe_quantizing(ctx, probes.quantized, recipe, calibration_scale)
    expect(seen["type"] == "GraphModule",
           f"quantize_for_npu returned a {seen['type']}, not the GraphModule convert_pt2e makes. README.md, 'Step 2'.")
    return seen


@CHECKS.check(stage="calibrate", weight=3)
def quantized_model_tracks_eager(ctx):
    "quantize_for_npu: a graph of quantize/dequantize patterns, on any batch size, within 20 dB SQNR of eager"
    for recipe in ("mlp", "gelu_norm", "residual", "dropout", "two_inputs"):  # two inputs: each one's batch
        seen = _quantized(ctx, recipe)
        qdq = [n for n in seen["nodes"] if n["target"].startswith(QDQ_PREFIX)]
        weights = len(weight_dequantizes(seen["nodes"]))
        decomposed = count(seen["nodes"], "aten.addmm.default") + count(seen["nodes"], "aten.mm.default")
        why = (f"The graph holds {decomposed} addmm/mm node(s): it was decomposed (run_decompositions, kata 8's "
               f"habit) before prepare_pt2e, so no aten.linear was left for NPUQuantizer to annotate. Quantize the "
               f"graph export gives, ep.module(). " if decomposed else
               "Did prepare_pt2e get your NPUQuantizer, and convert_pt2e the prepared model? ")
        expect(qdq and weights == ZOO[recipe].linears,
               f"quantize_for_npu's graph of {model_text(recipe)} holds {len(qdq)} quantize/dequantize node(s), "
               f"{weights} of them dequantizing an int8 weight, for its {ZOO[recipe].linears} Linear layers: "
               f"{ops_text(seen['nodes'])}. {why}README.md, 'Step 2'.")
        train = (f"The model was handed over in training mode (model.training is True; its Dropout is active "
                 f"until .eval()): export model.eval(), or export records the dropout into the graph you quantize, "
                 f"and every call drops other units. " if ZOO[recipe].train else "")
        expect_close_to_eager(recipe, seen["outputs"], what="quantize_for_npu's model",
                              hint=f"{train}README.md, 'Step 2'." if train else
                                   f"Evaluated on batches of {', '.join(map(str, probes.EVAL_BATCHES))} rows "
                                   f"(the example had {probes.EXAMPLE_BATCH}): export with a dynamic batch, and run "
                                   f"every calibration batch through the prepared model before convert_pt2e. "
                                   f"README.md, 'Step 2'.")


def calibration_range(recipe, scale: float | tuple) -> float:
    """max - min of the calibration batches, widened to hold 0 (as PT2E's observers do)."""
    values = torch.cat([batch[0].flatten() for batch in probes.calibration(recipe, scale)])
    return float(values.max().clamp(min=0) - values.min().clamp(max=0))


@CHECKS.check(stage="calibrate", weight=2)
def calibration_batches_set_the_ranges(ctx):
    "the observers see every calibration batch, read once from a generator: the input's int8 range covers them all"
    recipe = "mlp"
    for plan in ("the 8x batch first", "the 8x batch last"):
        scale = probes.CALIBRATION_PLANS[plan]
        seen = _quantized(ctx, recipe, scale)
        inputs = [n for n in seen["nodes"] if n["target"] == QDQ_PREFIX + "quantize_per_tensor.default"
                  and n["arg_ops"][:1] == ["placeholder"]]
        expect(inputs, f"quantize_for_npu's graph of {model_text(recipe)} does not quantize its input: "
                       f"{ops_text(seen['nodes'])}. README.md, 'Step 2'.")
        scale_x, zero_point = inputs[0]["qparams"][:2]
        covered, want = 255 * scale_x, calibration_range(recipe, scale)
        if scale_x == 1.0 and zero_point == 0:
            why = ("Scale 1.0 and zero point 0 are what an observer reports when it saw nothing: calibration was "
                   "skipped. Run every calibration batch through the prepared model before convert_pt2e.")
        else:
            why = (f"The {len(scale)} calibration batches came as a generator, which can be read once, each randn "
                   f"times {', '.join(f'{x:g}' for x in scale)} ({plan}); the example input is randn: were the "
                   f"observers shown the example only, or only some of the batches (a peek with next(iter(...)) "
                   f"uses one up)?")
        expect(0.5 * want <= covered <= 1.5 * want,
               f"quantize_for_npu quantized the input of {model_text(recipe)} with scale {scale_x:.4g} and zero point "
               f"{zero_point}: 256 codes covering {covered:.3g}, while the calibration batches span {want:.3g}. "
               f"{why} README.md, 'Calibration'.")


@CHECKS.check(stage="calibrate", weight=2)
def adds_read_one_scale(ctx):
    "both inputs of every add are dequantized with one scale and zero point: the int8 add takes one"
    for recipe in ("residual", "reused_linear"):
        seen = _quantized(ctx, recipe)
        by_name = {n["name"]: n for n in seen["nodes"]}
        for node in seen["nodes"]:
            if node["target"] != "aten.add.Tensor":
                continue
            params = [by_name.get(a, {}).get("qparams") for a in node["args"][:2]]
            expect(all(p is not None for p in params),
                   f"an input of {node['name']} (add) in quantize_for_npu's graph of {model_text(recipe)} is not "
                   f"dequantized from int8. README.md, 'The add'.")
            expect(params[0][:2] == params[1][:2],
                   f"the add {node['name']} in quantize_for_npu's graph of {model_text(recipe)} reads input 0 with "
                   f"(scale {params[0][0]:.4g}, zero point {params[0][1]}) and input 1 with (scale {params[1][0]:.4g}, "
                   f"zero point {params[1][1]}). The int8 add takes ONE scale and zero point, so this add stays in "
                   f"float on the CPU. Observe both inputs as one: annotate the second with "
                   f"SharedQuantizationSpec((first_input, add_node)). README.md, 'The add'.")


def weight_dequantizes(nodes: list[dict]) -> list[dict]:
    """The dequantize nodes that feed a linear's weight (input 1)."""
    by_name = {n["name"]: n for n in nodes}
    weights = [by_name.get(n["args"][1]) for n in nodes if n["target"] == "aten.linear.default" and len(n["args"]) > 1]
    return [w for w in weights if w is not None and w["target"].startswith(QDQ_PREFIX + "dequantize")]


@CHECKS.check(stage="per_channel", weight=2)
def skewed_weights_keep_their_small_channels(ctx):
    "per-channel weight scales: a layer with two rows 100x the rest keeps its SQNR"
    recipe = "skewed"
    seen = _quantized(ctx, recipe)
    per_tensor = [n["name"] for n in weight_dequantizes(seen["nodes"]) if n["target"].endswith("per_tensor.default")]
    worst = worst_sqnr(probes.eager(recipe), seen["outputs"], recipe=recipe, what="quantize_for_npu's model",
                       against="the eager model")
    expect(not per_tensor,
           f"quantize_for_npu's model of {model_text(recipe)} is {worst:.1f} dB from eager (SQNR); its weights are "
           f"dequantized per tensor ({', '.join(per_tensor)}). With one scale for a whole weight, the largest rows "
           f"set it and the small rows round to a few codes. Give every output channel its own scale: "
           f"torch.per_channel_symmetric, ch_axis=0. README.md, 'Per channel'.")
    expect(worst >= QUANTIZED_MIN_SQNR,
           f"quantize_for_npu's model of {model_text(recipe)} is {worst:.1f} dB from eager (SQNR; at least "
           f"{QUANTIZED_MIN_SQNR:.0f} dB expected), though its weights are per channel. {low_sqnr_reason(seen)}")


def low_sqnr_reason(seen: dict) -> str:
    """Why a quantized graph of `skewed` with per-channel weights lost its signal, read from its nodes."""
    by_name = {n["name"]: n for n in seen["nodes"]}
    uncalibrated = [n for n in seen["nodes"] if n["target"] == QDQ_PREFIX + "quantize_per_tensor.default"
                    and n["qparams"][:2] == [1.0, 0]]
    if uncalibrated:
        return ("Its quantize nodes have scale 1.0 and zero point 0, what an observer reports when it saw nothing: "
                "run every calibration batch through the prepared model. README.md, 'Calibration'.")
    before_relu = [n["name"] for n in seen["nodes"] if n["target"] == QDQ_PREFIX + "quantize_per_tensor.default"
                   and by_name.get(n["args"][0], {}).get("target") == "aten.linear.default"
                   and any(by_name.get(d, {}).get("users") and by_name.get(by_name[d]["users"][0], {}).get("target")
                           == "aten.relu.default" for d in n["users"])]
    biases = [n["args"][2] for n in seen["nodes"] if n["target"] == "aten.linear.default" and len(n["args"]) > 2
              and by_name.get(n["args"][2], {}).get("target", "").startswith(QDQ_PREFIX + "dequantize")]
    if biases:
        return (f"Its biases are quantized ({', '.join(biases)}): leave them float, the int8 linear rounds them to "
                f"int32 itself. README.md, 'Step 1'.")
    if before_relu:
        return (f"The linear's output is quantized before the relu ({', '.join(before_relu)}): the two big rows' "
                f"outputs are near -3000 there, so the int8 range is spent on values the relu throws away. Let the "
                f"relu carry the output. README.md, 'Patterns'.")
    return "README.md, 'Per channel' and 'Calibration'."


# --- Step 3: lowering ------------------------------------------------------------------------------------------

def _lowered(ctx, recipe, share_add: bool = True, weights: str = "symmetric", activations: str = "int8",
             edit: str = "none") -> dict:
    seen = ctx.probe(probes.lowered, recipe, share_add, weights, activations, edit)
    expect(seen["type"] == "GraphModule",
           f"lower_to_npu_int8 returned a {seen['type']}, not the GraphModule it was given, rewritten. "
           f"README.md, 'Step 3'.")
    expect_in_place(recipe, seen)
    return seen


def expect_in_place(recipe, seen: dict) -> None:
    expect(seen["in_place"],
           f"lower_to_npu_int8 returned another GraphModule than the one it was given (of {model_text(recipe)}): "
           f"the module it was given still holds every dequantize -> op -> quantize pattern. Lower the converted "
           f"module in place (edit its graph, recompile it) and return that same module. README.md, 'Step 3'.")


def given_nodes(recipe, **variant) -> list[dict]:
    """The spec's quantized graph of `recipe` with `variant`, described: what a lowering was given."""
    return probes.describe_quantized(probes.spec_converted(recipe, **variant))


def _lowered_variant(ctx, recipe, **variant) -> tuple[dict, dict]:  # noqa: D401
    """lower_to_npu_int8 on the spec's graph of `recipe` quantized with `variant` (SpecQuantizer's switches), and
    that graph's own outputs (computed here); the device's counters start from zero."""
    DEVICE.reset()
    return _lowered(ctx, recipe, **variant), probes.run(probes.spec_converted(recipe, **variant), recipe)


def expect_like_given(recipe, seen: dict, want: dict, note: str = "") -> None:
    expect_like_quantized(recipe, seen["outputs"], want, what="lower_to_npu_int8's graph",
                          against="the quantized graph it was given", note=note)


def expect_like_quantized(recipe, got: dict, want: dict, *, what: str, against: str, note: str = "") -> None:
    worst = worst_sqnr(want, got, recipe=recipe, what=what, against=against)
    expect(worst >= LOWERED_MIN_SQNR,
           f"{what} of {model_text(recipe)} is {worst:.1f} dB from {against} (SQNR).{note} The int8 ops compute what the "
           f"dequantize -> op -> quantize patterns compute, to within a rounding step, which keeps it above "
           f"{LOWERED_MIN_SQNR:.0f} dB. Read each pattern's scales and zero points from its own dequantize and "
           f"quantize nodes, pass the linear's bias, and apply the relu where the pattern has one. "
           f"README.md, 'Step 3'.")


def lowerable_patterns(nodes: list[dict]) -> tuple[int, int, list[str], list[str]]:
    """(linear patterns, add patterns, why each other linear or add of two tensors is not one, the patterns' op
    names) in a quantized graph, by the lesson's guards. An add with an alpha is no pattern and needs no reason."""
    by_name = {n["name"]: n for n in nodes}

    def int8_dequantize(name) -> tuple | None:
        node = by_name.get(name) if isinstance(name, str) else None
        if node is None or node["target"] != DEQUANTIZE or node["qparams"][2] != "int8":
            return None
        return tuple(node["qparams"][:2])

    def ends_in_int8_quantize(node: dict) -> bool:
        users = [by_name.get(u, {"target": u}) for u in node["users"]]
        return len(users) == 1 and users[0]["target"] == QUANTIZE and users[0]["qparams"][2] == "int8"

    def reader_names(node: dict) -> list[str]:
        return [by_name.get(u, {"target": u})["target"].removeprefix("aten.").removeprefix(QDQ_PREFIX)
                .removesuffix(".default") for u in node["users"]]

    linears, adds, refused, accepted = 0, 0, [], []
    for node in nodes:
        why = None
        if node["target"] == "aten.linear.default":
            weight = by_name.get(node["args"][1]) if len(node["args"]) > 1 and node["arg_ops"][1] else None
            relu = fused_relu(node, by_name)
            if int8_dequantize(node["args"][0]) is None:
                why = "its input is not dequantized from int8 per tensor"
            elif (weight is None or weight["target"] != DEQUANTIZE_PER_CHANNEL or weight["qparams"][1:3] != [0, "int8"]
                  or not all(weight["qparams"][3:5])):
                why = "its weight is not int8 with one scale per output channel (axis 0) and zero points all 0"
            elif not ends_in_int8_quantize(relu or node):
                why = (f"{'its relu' if relu else 'it'} is not read by one int8 quantize alone ("
                       f"{'the relu' if relu else 'the linear'}'s readers: {', '.join(reader_names(relu or node))})")
                if relu is None and any(by_name.get(u, {}).get("target") in RELU_TARGETS
                                        and ends_in_int8_quantize(by_name[u]) for u in node["users"]):
                    why += ("; a relu after it is quantized as if it rode on the linear, but the linear has another "
                            "reader")
            else:
                linears += 1
                accepted.append(node["name"])
        elif node["target"] in ADD_TARGETS and node["arg_ops"][:2] == ["call_function"] * 2 \
                and node["kwargs"].get("alpha", 1) == 1:
            a, b = (int8_dequantize(x) for x in node["args"][:2])
            if a is None or b is None:
                why = "an input is not dequantized from int8 per tensor"
            elif a != b:
                why = f"its inputs are dequantized with (scale, zero point) {a[0]:.4g}, {a[1]} and {b[0]:.4g}, {b[1]}"
            elif not ends_in_int8_quantize(node):
                why = f"it is not read by one int8 quantize alone (its readers: {', '.join(reader_names(node))})"
            else:
                adds += 1
                accepted.append(node["name"])
        elif node["target"] in ADD_TARGETS and len(node["arg_ops"]) > 1 and None not in node["arg_ops"][:2] \
                and node["kwargs"].get("alpha", 1) == 1:
            why = "an input is not dequantized from int8 per tensor"
        if why:
            refused.append(f"{node['name']} ({node['target'].removeprefix('aten.')}): {why}")
    return linears, adds, refused, accepted


def not_patterns(given: list[dict]) -> list[str]:
    """Every linear or add of a quantized graph that is no int8 pattern, with why (adds with alpha too)."""
    reasons = list(lowerable_patterns(given)[2])
    for node in given:
        if node["target"] in ADD_TARGETS and node["kwargs"].get("alpha", 1) != 1:
            reasons.append(f"{node['name']} ({node['target'].removeprefix('aten.')}): it has alpha="
                           f"{node['kwargs']['alpha']} (torch.add(a, b, alpha=...)); the int8 add computes a + b, "
                           f"with no alpha")
    return reasons


def left_hints(left: list[str], by_name: dict, lowered: list[str]) -> str:
    """What the patterns a lowering left float have in common that a guard may have taken for a reason: an in-place
    relu_ or add_, a quantize with several readers, a weight on [-128, 127] (when no such weight was lowered: then
    the range is not the reason). `lowered`: the patterns it did lower."""
    hints = []
    in_place = [f"{name}'s {op['name']} ({op['target']})" for name in left
                for op in [fused_relu(by_name[name], by_name) or by_name[name]]
                if op["target"] in ("aten.relu_.default", "aten.add_.Tensor")]
    if in_place:
        hints.append(f"In place: {', '.join(in_place)}. The in-place forms are the same patterns as aten.relu and "
                     f"aten.add.Tensor: match (and fuse) them the same way (README.md, 'In-place forms are the "
                     f"same patterns').")
    shared = []
    for name in left:
        end = fused_relu(by_name[name], by_name) or by_name[name]
        q = by_name.get(end["users"][0]) if len(end["users"]) == 1 else None
        if q is not None and len(q["users"]) > 1:
            shared.append(f"{q['name']} ({len(q['users'])} readers)")
    if shared:
        hints.append(f"Quantize nodes with several readers end these patterns: {', '.join(shared)}. That is still one "
                     f"pattern: q.replace_all_uses_with(int8 op) moves every reader to the int8 op.")

    def wide(names: list[str]) -> list[str]:
        return [by_name[name]["args"][1] for name in names if by_name[name]["target"] == "aten.linear.default"
                and by_name.get(by_name[name]["args"][1], {}).get("target") == DEQUANTIZE_PER_CHANNEL
                and by_name[by_name[name]["args"][1]]["args"][4] == -128]

    if wide(left) and not wide(lowered):
        hints.append(f"Their weights ({', '.join(wide(left))}) are quantized on [-128, 127], which the lesson "
                     f"allows: the int8 unit reads any int8 code, so judge a weight by its dtype, axis and zero "
                     f"points, not by its quant_min and quant_max.")
    return "".join(" " + hint for hint in hints)


def count_problem(given: list[dict] | None, lowered: list[dict], taken: bool = True) -> str:
    """Which of the given graph's linears and adds the lowering took or left against the lesson's guards (`taken`:
    also those it lowered though no pattern; False when the message says why already)."""
    if given is None:
        return ""
    names = {n["name"] for n in lowered}
    accepted = lowerable_patterns(given)[3]
    left = [n for n in accepted if n in names]
    taken = [why for why in not_patterns(given) if why.split(" ", 1)[0] not in names] if taken else []
    text = ""
    if left:
        by_name = {n["name"]: n for n in given}
        order = {n["name"]: i for i, n in enumerate(given)}
        delayed = [f"{name}'s relu ({relu['name']}) sits {order[relu['name']] - order[name] - 1} node(s) after it"
                   for name in left for relu in [fused_relu(by_name[name], by_name)]
                   if by_name[name]["target"] == "aten.linear.default" and relu is not None
                   and order[relu["name"]] > order[name] + 1]
        text += (f" Left in float though each is an int8 pattern of the graph it was given (int8 dequantize -> op "
                 f"-> one int8 per-tensor quantize, weights int8 per output channel with zero points 0, an add's "
                 f"inputs of one scale and zero point): {', '.join(left)}. A guard refused a pattern the lesson "
                 f"lowers.{left_hints(left, by_name, [n for n in accepted if n not in names])}")
        if delayed:
            text += (f" In the graph, {'; '.join(delayed)}, its only user: find a linear's relu among its users "
                     f"(node.users), not as the next node.")
    if taken:
        text += f" Lowered though no int8 pattern: {'; '.join(taken[:3])}."
    return text

def expect_patterns_quantized(recipe, nodes: list[dict], linears: int, adds: int) -> None:
    """The attempt's quantized graph holds `linears` linear and `adds` add patterns by the lowering's guards: when
    it does not, the fault is in annotate or calibrate, whatever the lowering did."""
    got = lowerable_patterns(nodes)
    if got[:2] == (linears, adds):
        return
    uncalibrated = any(n["target"] == QUANTIZE and n["qparams"][:2] == [1.0, 0] for n in nodes)
    refused = "; ".join(got[2][:3]) + (f"; and {len(got[2]) - 3} more" if len(got[2]) > 3 else "") if got[2] else \
        f"none (no linear or add of two tensors is left: {ops_text(nodes)})"
    hint = (" Its quantize nodes have scale 1.0 and zero point 0, what an observer reports when it saw nothing: "
            "run every calibration batch through the prepared model. README.md, 'Calibration'." if uncalibrated else
            " README.md, 'Step 1' ('Patterns', 'The add') and 'Step 2'.")
    raise CheckFailed(
        f"your quantize_for_npu's graph of {model_text(recipe)} holds {got[0]} linear and {got[1]} add pattern(s) "
        f"that the int8 unit runs, by the lowering's guards; the model has {linears} Linear(s) and {adds} add(s) of "
        f"two tensors, each one such pattern when NPUQuantizer annotates it the lesson's way and calibration runs. "
        f"Not patterns: {refused}. A lowering must leave these float, so the fault is in NPUQuantizer.annotate or "
        f"quantize_for_npu, not in lower_to_npu_int8.{hint}")


def expect_runs(recipe, seen: dict) -> None:
    """Every evaluation batch ran, on the quantized graph (when the probe has it) and on the lowered one: a failure is
    named with its batch and error before the NPU's counters are read (a graph that raised launched nothing)."""
    for key, what in (("quantized_outputs", "your quantized graph"), ("outputs", "lower_to_npu_int8's graph")):
        failed = {b: out for b, out in seen.get(key, {}).items() if isinstance(out, str)}
        if failed:
            worst_sqnr(failed, failed, recipe=recipe, what=what, against="")


def expect_launches(recipe, nodes: list[dict], linears: int, adds: int, *, what: str,
                    given: list[dict] | None = None, runs: int | None = None) -> None:
    """The graph holds `linears` int8_linear and `adds` int8_add nodes, and running it launched exactly those.
    `given`, the quantized graph the lowering was given, lets the message name the ops taken or left wrongly."""
    got = (count(nodes, probes.INT8_LINEAR), count(nodes, probes.INT8_ADD))
    expect(got == (linears, adds),
           f"{what} of {model_text(recipe)} holds {got[0]} int8_linear and {got[1]} int8_add node(s); its int8 "
           f"patterns are {linears} linear(s) and {adds} add(s): {ops_text(nodes)}.{count_problem(given, nodes)} "
           f"README.md, 'Step 3'.")
    refused = DEVICE.stats.compile_errors
    expect(not refused, f"the NPU refused {len(refused)} of the int8 ops in {what} of {model_text(recipe)}; the "
                        f"first: {refused[0] if refused else ''}. README.md, 'What the int8 unit runs'.")
    ran = DEVICE.stats.ops_run
    runs = len(probes.EVAL_BATCHES) if runs is None else runs
    stale = (ran["int8_linear"], ran["int8_add"]) == (0, 0) and linears + adds > 0
    expect((ran["int8_linear"], ran["int8_add"]) == (linears * runs, adds * runs),
           f"running {what} of {model_text(recipe)} {runs} times launched {ran['int8_linear']} int8_linear and "
           f"{ran['int8_add']} int8_add on the NPU; its int8 ops make {linears * runs} and {adds * runs}. "
           + ("Its graph holds those int8 nodes, yet calling the module launched none: the module still runs the "
              "code of its graph before your edits. A GraphModule runs the Python code it generated at its last "
              "recompile: call gm.recompile() after editing gm.graph, before you return gm. README.md, 'Step 3'. "
              if stale else
              "Call torch.ops.kata.int8_linear / int8_add: they run on the NPU. ")
           + DEVICE.stats.summary())


def expect_no_leftovers(recipe, nodes: list[dict], *, what: str) -> None:
    """No node of the lowered graph is computed for nothing (no reader), and no int8 op reads codes requantized from
    a dequantize: each would run on the CPU on every call."""
    by_name = {n["name"]: n for n in nodes}
    dead = [f"{n['name']} ({ops_text([n])})" for n in nodes if not n["users"]]
    expect(not dead,
           f"{what} of {model_text(recipe)} keeps {len(dead)} node(s) whose result nothing reads: "
           f"{', '.join(dead[:6])}. Each still runs on the CPU on every call. After q.replace_all_uses_with(int8 op), "
           f"erase the pattern's float nodes that nothing reads any more: the quantize, the op (and its relu), and "
           f"the dequantize nodes that fed it, the weight's too. README.md, 'Step 3'.")
    for node in nodes:
        if node["target"] not in INT8_TARGETS:
            continue
        for arg in node["args"][:2 if node["target"] == probes.INT8_ADD else 1]:
            source = by_name.get(arg) if isinstance(arg, str) else None
            again = by_name.get(source["args"][0]) if source and source["target"] == QUANTIZE else None
            expect(again is None or not again["target"].startswith(QDQ_PREFIX + "dequantize"),
                   f"{node['name']} ({ops_text([node])}) in {what} of {model_text(recipe)} reads {arg}, a quantize "
                   f"of {again['name'] if again else ''} ({ops_text([again]) if again else ''}): codes dequantized "
                   f"and quantized again, the same codes after a round trip on the CPU on every call. The int8 op "
                   f"reads the int8 tensor the dequantize read (x_dq.args[0]). README.md, 'Step 3'.")


def expect_relus_ride(recipe, seen: dict, *, what: str) -> None:
    """No relu that is its linear's only user in the model is left in float: the int8 linear applies it."""
    riding, relus = probes.riding_relus(recipe)
    left = [n for n in seen["nodes"] if n["target"] in RELU_TARGETS]
    if len(left) <= relus - riding:
        return
    by_name = {n["name"]: n for n in seen["quantized_nodes"]}
    quantized_apart = [n["name"] for n in seen["quantized_nodes"] if n["target"] in RELU_TARGETS
                       and by_name.get(n["args"][0], {}).get("target") == DEQUANTIZE]
    where = (f"Your quantized graph already quantizes a linear's output before its relu ({', '.join(quantized_apart)} "
             f"reads a dequantize): NPUQuantizer.annotate did not pair the relu with its linear. README.md, "
             f"'Patterns'." if quantized_apart else
             "Your quantized graph has no quantize between them: lower_to_npu_int8 did not fuse the relu (relu=True). "
             "README.md, 'Step 3'.")

    def readers(node: dict) -> int:  # a relu's readers in the quantized graph, through the quantize of its output
        users = [by_name.get(u, {}) for u in node["users"]]
        return len(users[0].get("users", [])) if len(users) == 1 and users[0].get("target") == QUANTIZE \
            else len(users)

    read_twice = [f"{n['name']} ({readers(n)} readers)" for n in seen["quantized_nodes"]
                  if n["target"] in RELU_TARGETS and n["name"] in quantized_apart and readers(n) > 1]
    how = (f"The relu's own readers do not matter ({', '.join(read_twice)}): the single-user guard is on the "
           f"linear, whose only user must be the relu; the int8 op's output then goes to every reader of the relu. "
           if read_twice else
           "Export keeps the forward's order, so other nodes may sit between a linear and its relu: find the relu "
           "among the linear's users (node.users), not as the next node. ")
    raise CheckFailed(
        f"{what} of {model_text(recipe)} still runs {len(left)} relu(s) in float on the CPU "
        f"({', '.join(n['name'] for n in left)}); in the model, {riding} of its {relus} relu(s) are their linear's "
        f"only user, and each of those rides on its linear: the int8 linear applies it, with no quantize between "
        f"them. {how}{where}")


@CHECKS.check(stage="lower", weight=3)
def every_int8_pattern_becomes_one_int8_op(ctx):
    "lower_to_npu_int8: each dq -> linear [-> relu] -> q and dq -> add -> q is one int8 op on the NPU; same numbers"
    # the weight range the lesson allows, either: [-127, 127] on every model, [-128, 127] on some (WEIGHT_RANGES)
    # and activations on [-127, 127] (the guards do not look at an activation's range either)
    cases = [(recipe, {}) for recipe in ("mlp", "no_bias", "residual", "gelu_norm", "two_inputs")]
    cases += [(recipe, {"weights": "symmetric_full_range"}) for recipe in ("mlp", "two_inputs")]
    cases += [("residual", {"activations": "int8_narrow"})]
    cases += [(probes.DELAYED_RELUS[-1], {})]  # a relu three nodes after its linear, riding on it
    # one output channel other than the first with its own scale (x4) and a code at -128: still int8, per output
    # channel, zero points 0 (GUARD_EDITS)
    cases += [("mlp", {"edit": edit}) for edit, (function, arguments) in probes.GUARD_EDITS.items()
              if function is probes.edit_weight_channel and arguments[1] == "scale and range"]
    for recipe, variant in cases:
        seen, want = _lowered_variant(ctx, recipe, **variant)
        expect_runs(recipe, seen)
        label = {"weights": " (weights on [-128, 127])", "activations": " (activations int8 on [-127, 127])",
                 "edit": f" (in which {variant.get('edit')}: still int8, per output channel, zero points 0)"}
        expect_launches(recipe, seen["nodes"], *probes.patterns_of(recipe),
                        what="lower_to_npu_int8's graph" + "".join(label[k] for k in variant),
                        given=given_nodes(recipe, **variant))
        expect_like_given(recipe, seen, want)
        expect_no_leftovers(recipe, seen["nodes"], what="lower_to_npu_int8's graph")
        by_name = {n["name"]: n for n in seen["nodes"]}
        left = [n["name"] for n in seen["nodes"] if n["target"] in ("aten.linear.default", *ADD_TARGETS)
                or (n["target"] in RELU_TARGETS and any(by_name.get(a, {}).get("target") == probes.INT8_LINEAR
                                                       for a in n["args"]))]
        expect(not left, f"lower_to_npu_int8's graph of {model_text(recipe)} still runs {', '.join(left)} in float: "
                         f"{ops_text(seen['nodes'])}. README.md, 'Step 3'.")


@CHECKS.check(stage="lower", weight=2)
def lowering_reads_each_number_from_its_own_node(ctx):
    "the input's scale and zero point come from the dequantize feeding the op, the output's from the quantize ending it"
    recipe, edit = "mlp", "dequantize numbers differ from their quantize's"
    seen, want = _lowered_variant(ctx, recipe, edit=edit)
    factor, shift = probes.EDITS[edit]
    worst = worst_sqnr(want, seen["outputs"], recipe=recipe, what="lower_to_npu_int8's graph",
                       against="the quantized graph it was given")
    expect(worst >= LOWERED_MIN_SQNR,
           f"lower_to_npu_int8's graph of {model_text(recipe)} is {worst:.1f} dB from the graph it was given (SQNR). "
           f"In that graph every dequantize reads its codes with another scale and zero point than the quantize "
           f"that made them (scale x{factor:g}, zero point {shift:+d}; convert_pt2e writes the same numbers, another "
           f"tool or a person may not), so a number read from the wrong node shows. Read the input's (scale, "
           f"zero_point) from the dequantize that feeds the op (not from the quantize that made the value), and the "
           f"output's from the quantize that ends the pattern (not from a dequantize after it). README.md, 'Step 3'.")
    expect_launches(recipe, seen["nodes"], ZOO[recipe].linears, ZOO[recipe].adds, what="lower_to_npu_int8's graph",
                    given=given_nodes(recipe, edit=edit))


@CHECKS.check(stage="lower", weight=2)
def add_of_two_scales_stays_float(ctx):
    "an add whose inputs are dequantized with different scales is not lowered: the int8 add takes one scale"
    for recipe in ("residual", "reused_linear"):
        seen, want = _lowered_variant(ctx, recipe, share_add=False)
        adds = count(seen["nodes"], probes.INT8_ADD)
        expect(adds == 0,
               f"lower_to_npu_int8 lowered the add of {model_text(recipe)} to int8_add, but in this graph (quantized "
               f"with the add's inputs observed apart) its two inputs are dequantized with different scales. The "
               f"int8 add takes one scale and zero point for both: with either one, the other input is read wrong. "
               f"Lower an add only when both dequantize nodes carry the same (scale, zero_point); otherwise leave "
               f"the float add between them. README.md, 'The add'.")
        expect_launches(recipe, seen["nodes"], ZOO[recipe].linears, 0, what="lower_to_npu_int8's graph",
                        given=given_nodes(recipe, share_add=False))
        expect_like_given(recipe, seen, want)
    # the add's two dequantize nodes differ a little: in the zero point alone, or in the scale by 0.5 % (GUARD_EDITS)
    for recipe in ("residual", "reused_linear"):
        for edit in [e for e in probes.GUARD_EDITS if e.startswith("an add's")]:
            seen, want = _lowered_variant(ctx, recipe, edit=edit)
            adds = count(seen["nodes"], probes.INT8_ADD)
            expect(adds == 0,
                   f"lower_to_npu_int8 lowered the add of {model_text(recipe)} to int8_add, but in this graph "
                   f"{edit}: its two inputs are dequantized with different (scale, zero_point). The int8 add reads "
                   f"both with one, so the second input would be read wrong (however little: the outputs may "
                   f"even look the same). Compare both numbers exactly, with ==, no tolerance: a zero point off by "
                   f"a few codes, or a scale off by anything down to one float64 ULP, is another dequantize. "
                   f"README.md, 'Step 3'.")
            expect_launches(recipe, seen["nodes"], ZOO[recipe].linears, 0, what="lower_to_npu_int8's graph",
                            given=given_nodes(recipe, edit=edit))
            expect_like_given(recipe, seen, want, note=(
                f" The add was rightly left float; another pattern's numbers are off. In this graph {edit}, so "
                f"that dequantize no longer carries the numbers of the quantize before it: read a pattern's output "
                f"scale and zero point from the quantize that ends it, not from a dequantize after it."))


@CHECKS.check(stage="lower", weight=1)
def weights_the_int8_linear_cannot_read_stay_float(ctx):
    "a weight not int8 (int16, uint8), not per output channel (ch_axis=1, per tensor) or with zero points: not lowered"
    # every property the lesson's guard names, each varied alone: the dtype, the axis and granularity, the zero points
    stored = ("stored as {dtype} ({how}), though per output channel with zero points all 0: the int8 linear reads "
              "int8 weights only. Judge a weight's dtype by its dequantize_per_channel's dtype argument (or the "
              "constant's .dtype), not by its axis and zero points alone, nor by its range")
    cases = [
        ("mlp", {"weights": "affine"},
         "quantized per_channel_affine: their zero points are not 0. The int8 linear's weights are symmetric; it has "
         "no weight zero point to subtract, so the products come out wrong"),
        ("gated", {"weights": "input_channels"},
         "quantized with one scale per input channel (ch_axis=1; two of them are square, so the scales even come in "
         "the right number): the int8 linear scales each output channel, one scale per row"),
        ("mlp", {"weights": "per_tensor"},
         "quantized per tensor (one scale for the whole weight, a dequantize_per_tensor): the int8 linear's weights "
         "come with a dequantize_per_channel on axis 0, one scale per output channel"),
        ("mlp", {"weights": "int16"},
         stored.format(dtype="int16", how="quantized per_channel_symmetric with torch.int16 on [-32767, 32767]")),
    ]
    for dtype in probes.WEIGHT_DTYPES:
        how = ("int8's codes and range [-128, 127] in an int16 tensor" if dtype == "int16" else
               "codes on [0, 255], zero points 0")
        cases.append(("mlp", {"edit": f"every weight stored as {dtype}, zero points 0, one scale per output channel"},
                      stored.format(dtype=dtype, how=how)))
    # a zero point in one output channel only, the middle or the last one (its first channel's is 0)
    for edit, (which, what) in [(e, v[1]) for e, v in probes.GUARD_EDITS.items()
                                if v[0] is probes.edit_weight_channel]:
        if what == "zero point":
            cases.append(("mlp", {"edit": edit},
                          f"per output channel with zero points 0 in every channel but the {which} one, whose zero "
                          f"point is {'+3' if which == 'middle' else '-3'}: a weight with a zero point in any channel "
                          f"is not the int8 linear's (it has no weight zero point to subtract). Test every channel's "
                          f"zero point, e.g. zero_points.any(), not only the first's"))
    for recipe, variant, why in cases:
        seen, want = _lowered_variant(ctx, recipe, **variant)
        linears = count(seen["nodes"], probes.INT8_LINEAR)
        expect(linears == 0,
               f"lower_to_npu_int8 lowered {linears} linear(s) of {model_text(recipe)} whose weights were {why}. "
               f"A weight is the int8 linear's only when it is int8, per output channel (axis 0) and has zero "
               f"points all 0; leave any other pattern in float. README.md, 'Step 3' (the guards).")
        expect_like_given(recipe, seen, want)


@CHECKS.check(stage="lower", weight=1)
def patterns_of_other_kinds_stay_float(ctx):
    "uint8 activations, adds with alpha, a linear whose output stays float, a relu past a second reader: not lowered"
    cases = (
        ("mlp", "uint8", 0, 0, "its activations are quantized to uint8 (the x86 habit): the int8 ops read and write "
                               "int8, so a uint8 pattern is not theirs"),
        ("scaled_sums", "int8", 3, 0, "its adds are torch.add(a, b, alpha=...): the int8 add computes a + b"),
        ("mlp", "float_output", 1, 0, "the output of its last linear is not quantized (the model returns it in "
                                      "float): with no quantize ending the pattern there is no output scale to "
                                      "requantize to"),
        ("reused_linear", "relu_past_a_second_reader", 1, 1,
         "in this graph the relu after fc1 carries the quantize though fc1's output has a second reader (the add), "
         "so fused, the float linear would stay for that reader and the linear would be computed twice: a relu "
         "rides only on a linear it is the only user of"),
    )
    # one value's quantize (and its dequantize nodes) of another dtype, the first or the last pattern's (GUARD_EDITS)
    uint8 = ("the quantize ending a pattern and the dequantize nodes reading it are uint8 (the first or last "
             "pattern's output here): that pattern writes uint8, and the one reading it reads uint8; the int8 ops "
             "read and write int8, so check the dtype of the quantize ending a pattern too, not only of the "
             "dequantize nodes feeding it")
    cases += (("mlp", "the first pattern's output quantized to uint8", None, None, uint8),
              ("residual", "the first pattern's output quantized to uint8", None, None, uint8),
              ("mlp", "the last pattern's output quantized to uint8", None, None, uint8))
    # one input of an add of another dtype, its scale and zero point equal to the other input's (GUARD_EDITS)
    for recipe in ("residual", "reused_linear"):
        for dtype in probes.ADD_INPUT_DTYPES:
            for position in (0, 1):
                cases += ((recipe, f"input {position} of an add quantized to {dtype}, its scale and zero point kept",
                           None, None,
                           f"input {position} of its add reads {dtype} codes, with the same scale and zero point as "
                           f"input {1 - position}: an add's inputs share one observer, so one (scale, zero_point), "
                           f"but a graph may store either in another container. The int8 add reads int8 only: "
                           f"check the dtype of both dequantize nodes feeding the add, not only the first's"),)
    # the op ending a pattern (a riding relu, a bare linear, an add) read by something else too: a float op, the graph's
    # output, a second quantize; before or after its quantize among the op's users and in graph order (GUARD_EDITS)
    for edit, (function, (op, reader, first)) in [(e, v) for e, v in probes.GUARD_EDITS.items()
                                                  if v[0] is probes.add_second_reader]:
        cases += (("mlp" if op == "relu" else "residual", edit, None, None,
                   f"in this graph {edit} (that reader is {'first' if first else 'second'} among the op's "
                   f"users): it needs "
                   f"the op's float value, so the quantize is not its only reader. Lowered anyway, the float "
                   f"{op} (and what feeds it) stays in the graph for that reader beside the int8 op: computed twice, "
                   f"on the CPU and on the NPU. A pattern ends in an int8 quantize that is its op's ONLY reader: test "
                   f"len(op.users) == 1 on the op that ends it (the relu, the linear, the add alike); the graph's "
                   f"output node and a second quantize are readers too"),)
    for recipe, variant, linears, adds, what in cases:
        kwargs = {"edit": variant} if variant in probes.GUARD_EDITS else {"activations": variant}
        seen, want = _lowered_variant(ctx, recipe, **kwargs)
        given = given_nodes(recipe, **kwargs)
        if linears is None:
            linears, adds = lowerable_patterns(given)[:2]
        got = (count(seen["nodes"], probes.INT8_LINEAR), count(seen["nodes"], probes.INT8_ADD))
        fewer = got[0] < linears or got[1] < adds
        expect(got == (linears, adds),
               f"lower_to_npu_int8 made {got[0]} int8_linear and {got[1]} int8_add node(s) of {model_text(recipe)}; "
               f"{linears} int8_linear and {adds} int8_add were right"
               + (f".{count_problem(given, seen['nodes'])}" if fewer else
                  f": {what}. Leave such a pattern in float.{count_problem(given, seen['nodes'], taken=False)}")
               + " README.md, 'Step 3'.")
        expect_like_given(recipe, seen, want)


# --- Step 4: the whole path, and the metric -------------------------------------------------------------------

@CHECKS.check(stage="npu", weight=3)
def every_linear_and_add_runs_int8_on_the_npu(ctx):
    "quantize_for_npu then lower_to_npu_int8: every Linear and tensor add runs int8 on the NPU, within 20 dB of eager"
    for recipe in ("residual", "two_inputs", "gated", "gelu_norm", probes.DELAYED_RELUS[0]):
        DEVICE.reset()
        seen = probe_quantizing(ctx, probes.quantized_and_lowered, recipe)
        expect(seen["type"] == "GraphModule", f"quantize_for_npu or lower_to_npu_int8 returned a {seen['type']}, "
                                              f"not a GraphModule. README.md, 'Step 4'.")
        expect_in_place(recipe, seen)
        expect_patterns_quantized(recipe, seen["quantized_nodes"], *probes.patterns_of(recipe))
        expect_runs(recipe, seen)
        expect_launches(recipe, seen["nodes"], *probes.patterns_of(recipe),
                        what="your quantized and lowered graph", given=seen["quantized_nodes"])
        expect_relus_ride(recipe, seen, what="your quantized and lowered graph")
        expect_like_quantized(recipe, seen["outputs"], seen["quantized_outputs"], what="lower_to_npu_int8's graph",
                              against="your quantized graph")
        expect_no_leftovers(recipe, seen["nodes"], what="your quantized and lowered graph")
        expect_close_to_eager(recipe, seen["outputs"], what="your quantized and lowered model",
                              hint="README.md, 'Step 4'.")


SQNR_CASES = (  # (reference, noise) pairs whose SQNR is known: 10 * log10(signal power / noise power)
    ("ones(8) against ones(8) + 0.1", lambda: (torch.ones(8), torch.ones(8) + 0.1), 20.0),
    ("a ramp against itself", lambda: (torch.linspace(-2, 2, 12), torch.linspace(-2, 2, 12)), math.inf),
    ("a 3 x 4 matrix against its negation", lambda: (torch.arange(12.0).view(3, 4) + 1,
                                                     -(torch.arange(12.0).view(3, 4) + 1)), 10 * math.log10(0.25)),
    ("[3, 4] against [3, 5]", lambda: (torch.tensor([3.0, 4.0]), torch.tensor([3.0, 5.0])), 10 * math.log10(25.0)),
    ("zeros(5) against zeros(5)", lambda: (torch.zeros(5), torch.zeros(5)), math.inf),
    ("ones(100) against ones(100) + 1e-6 (near-equal: torch.allclose calls them equal)",
     lambda: (torch.ones(100), torch.ones(100) + 1e-6), None),
    ("float16 full((4,), 300.) against it + 1 (300 squared overflows float16)",
     lambda: (torch.full((4,), 300.0, dtype=torch.float16), torch.full((4,), 301.0, dtype=torch.float16)), None),
    ("bfloat16 values up to 1000 against them with noise of a tenth",
     lambda: (torch.linspace(-1000, 1000, 16).to(torch.bfloat16),
              (torch.linspace(-1000, 1000, 16) * 1.1).to(torch.bfloat16)), None),
)



def _near_range_cases() -> tuple:
    """Pairs near the largest value of float16, bfloat16 and float32, of opposite signs: the difference overflows the
    dtype, not only the squares (60000 - (-60000) is inf in float16). SQNR -6.02 dB (actual = -reference) or -3.52 dB
    (actual = -reference / 2), at 60 % and 99 % of the largest value."""
    cases = []
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        top, name = torch.finfo(dtype).max, str(dtype).removeprefix("torch.")
        for fraction in (0.6, 0.99):
            for factor in (-1.0, -0.5):
                def make(dtype=dtype, value=fraction * top, factor=factor):
                    reference = torch.tensor([value, -value / 3], dtype=torch.float64)
                    return reference.to(dtype), (reference * factor).to(dtype)
                cases.append((f"{name} [{fraction:g} * {top:.6g}, -{fraction:g} * {top:.6g} / 3] against it times "
                              f"{factor:g} (near {name}'s largest value: the difference overflows {name})", make, None))
    return tuple(cases)


def _high_ratio_cases() -> tuple:
    """Near-equal pairs far above 120 dB, whose noise is tiny but not 0: a float64 ramp against it times (1 + 10^-k),
    and ones(100) with one element moved by 10^-k (20 * k and 20 + 20 * k dB, up to 320), and float32
    ones(4096) with one element one ULP off (about 175 dB)."""
    cases = []
    for k in (7, 9, 11, 13, 15):
        cases.append((f"a float64 ramp from 1 to 2 against it times (1 + 1e-{k}) (about {20 * k} dB)",
                      lambda k=k: (torch.linspace(1, 2, 16, dtype=torch.float64),
                                   torch.linspace(1, 2, 16, dtype=torch.float64) * (1 + 10.0 ** -k)), None))

        def one_moved(k=k):
            actual = torch.ones(100, dtype=torch.float64)
            actual[37] += 10.0 ** -k
            return torch.ones(100, dtype=torch.float64), actual
        cases.append((f"float64 ones(100) against it with one element + 1e-{k} (about {20 + 2 * 10 * k} dB)",
                      one_moved, None))

    def ulp_off():
        actual = torch.ones(4096)
        actual[5] = torch.nextafter(torch.tensor(1.0), torch.tensor(2.0))
        return torch.ones(4096), actual
    cases.append(("float32 ones(4096) against it with one element one ULP above 1 (about 175 dB)", ulp_off, None))
    return tuple(cases)


def _float64_step_cases() -> tuple:
    """float64 pairs whose SQNR comes out another number (inf, nan, 0 dB or an error) when any one step is done in
    float32: converting the tensors, subtracting, squaring, summing, the power ratio, its log10. Float32 holds
    magnitudes from 1.4e-45 to 3.4e38 and 24 bits; these pairs step outside that at one step each."""
    def f64(*values):
        return torch.tensor(values, dtype=torch.float64)

    top = math.nextafter(1.0, 2.0)
    return (
        ("float64 [1e20, 1.0] against [1e20, 1.0 + 2.2e-16] (one float64 ULP on the small element: about 713 dB; "
         "the power ratio, 5e71, is past float32's largest value)",
         lambda: (f64(1e20, 1.0), f64(1e20, top)), None),
        ("float64 [1, 1, 0, 1] against [1, 1, 1e-20, 1] (about 405 dB; the power ratio, 3e40, is past float32's "
         "largest value, 3.4e38)",
         lambda: (f64(1.0, 1.0, 0.0, 1.0), f64(1.0, 1.0, 1e-20, 1.0)), None),
        ("float64 [1e-10, 2e-10] against [1e20, -1e20] (about -596 dB; the power ratio, 2.5e-60, is under "
         "float32's smallest)",
         lambda: (f64(1e-10, 2e-10), f64(1e20, -1e20)), None),
        ("float64 full((16,), 1e19) against it times 1.1 (20 dB; each square fits float32, their sum does not)",
         lambda: (torch.full((16,), 1e19, dtype=torch.float64), torch.full((16,), 1.1e19, dtype=torch.float64)),
         None),
        ("float64 full((8,), 3e-30) against it times 1.1 (20 dB; the squares, 9e-60, are under float32's "
         "smallest)",
         lambda: (torch.full((8,), 3e-30, dtype=torch.float64), torch.full((8,), 3.3e-30, dtype=torch.float64)),
         None),
        ("float32 full((8,), 3e-30) against it times 1.1 (20 dB; float32 values whose squares are under float32's "
         "smallest)",
         lambda: (torch.full((8,), 3e-30), torch.full((8,), 3.3e-30)), None),
    )


SQNR_CASES += _near_range_cases() + _high_ratio_cases() + _float64_step_cases()


def sqnr_agrees(value, want: float) -> bool:
    if isinstance(value, str) or math.isnan(value):
        return False
    return value == want if math.isinf(want) else abs(value - want) <= SQNR_TOLERANCE_DB


def sqnr_problem(text: str, value, want: float, dtype: torch.dtype) -> str:
    if isinstance(value, str):
        return f"sqnr({text}) raised {value}. README.md, 'Step 4'."
    why, name = "", str(dtype).removeprefix("torch.")
    if dtype == torch.float64 and not math.isfinite(value) and math.isfinite(want):
        why = ((" inf is for exactly equal tensors only (noise exactly 0), and these differ. Unless your code "
                "returns inf on purpose for them, a step ran in float32." if math.isinf(value) and value > 0 else "")
               + " The tensors are float64, and every step must stay float64: the subtraction, the squares, their "
               "sums, the power ratio and its log10. Float32 holds magnitudes from 1.4e-45 to 3.4e38 only (a power "
               "ratio past 3.4e38 is an SQNR above 385 dB), and torch.tensor(a_number) or .float() makes float32; "
               "Python floats and math.log10 are float64.")
    elif math.isinf(value) and value > 0 and not math.isinf(want) and want > 60:
        why = (" inf is for exactly equal tensors only (noise exactly 0), not for near-equal ones, however small "
               "their noise.")
    elif not math.isfinite(value) and math.isfinite(want):
        why = (f" A value overflowed: {name}'s largest is {torch.finfo(dtype).max:.6g}, and the difference of two "
               f"values near it overflows as well as their squares. Convert both tensors to float64 first, then "
               f"subtract, square and sum, all in float64.")
    elif dtype in (torch.float16, torch.bfloat16):
        why = f" The tensors are {name}: convert both to float64 first, then subtract, square and sum in float64."
    gap = f" ({abs(value - want):.4f} dB off)" if math.isfinite(value) and math.isfinite(want) else ""
    return (f"sqnr({text}) returned {value:.4f}; the signal-to-quantization-noise ratio is {want:.4f} dB{gap} (10 * "
            f"log10 of the reference's power over the difference's power, in float64; the checks allow "
            f"{SQNR_TOLERANCE_DB} dB).{why} README.md, 'Step 4'.")


def _pair_text(pair) -> str:
    """A pair at full precision, as code that makes it."""
    name = str(pair[0].dtype).removeprefix("torch.")
    return "\n  ".join(f"{label} = torch.tensor({t.tolist()!r}, dtype=torch.{name})"
                       for label, t in zip(("reference", "actual"), pair))


@CHECKS.check(stage="npu", weight=1)
def sqnr_is_signal_over_noise_in_decibels(ctx):
    "sqnr(reference, actual) = 10 * log10(sum(reference^2) / sum((reference - actual)^2)) in float64, any float dtype"
    pairs = [make() for _, make, _ in SQNR_CASES]
    got = ctx.probe(probes.sqnr_of, pairs)
    for (text, _, want), (reference, actual), value in zip(SQNR_CASES, pairs, got):
        want = sqnr(reference, actual) if want is None else want
        expect(sqnr_agrees(value, want), sqnr_problem(text, value, want, reference.dtype))

    def prop(pair) -> None:
        reference, actual = pair
        value = ctx.probe(probes.sqnr_of, [pair])[0]
        want = sqnr(reference, actual)
        expect(sqnr_agrees(value, want), sqnr_problem("of the pair below", value, want, reference.dtype))

    fuzz(ctx, sqnr_pairs(), prop, describe=_pair_text,
         max_examples=max(4, ctx.max_examples // 2))


# --- fuzz ------------------------------------------------------------------------------------------------------

@CHECKS.check(stage="fuzz", weight=3)
def random_mlps_run_int8_on_the_npu(ctx):
    "random models (one or two inputs, relu, GELU, z + z, in-place relu_ and +=, values also returned): int8, same output"
    def prop(program) -> None:
        DEVICE.reset()
        seen = probe_quantizing(ctx, probes.quantized_and_lowered, program, brief=True)
        expect(seen["type"] == "GraphModule", f"quantize_for_npu or lower_to_npu_int8 returned a {seen['type']}.")
        linears, adds = probes.program_counts(program)
        expect_in_place(program, seen)
        expect_patterns_quantized(program, seen["quantized_nodes"], linears, adds)
        expect_runs(program, seen)
        expect_launches(program, seen["nodes"], linears, adds, what="your quantized and lowered graph",
                        given=seen["quantized_nodes"])
        expect_relus_ride(program, seen, what="your quantized and lowered graph")
        expect_like_quantized(program, seen["outputs"], seen["quantized_outputs"], what="lower_to_npu_int8's graph",
                              against="your quantized graph")
        expect_no_leftovers(program, seen["nodes"], what="your quantized and lowered graph")

    fuzz(ctx, int8_programs(), prop, describe=lambda program: model_text(program) + "  (inputs: randn * 3, any batch)",
         max_examples=max(4, ctx.max_examples // 3))


# --- the sensitivity step -------------------------------------------------------------------------------------
# One layer can take a whole model under the bar. The rule the lesson states (README.md, 'When one layer ruins the
# model'): a layer's sensitivity is the model's SQNR with that layer alone quantized, over every calibration batch;
# keep float the shortest start of the ranking (lowest SQNR first, ties in graph order) with which the model reaches
# the bar. The choice is a function of plain data (choose_float_layers), checked on tables drawn along every axis of
# the rule; the measurement and the quantization on chains built with a layer whose outlier channels round everything
# else away (probes.SENSITIVITY_MODELS), judged against the attempt's own quantize_for_npu; MobileNetV2 in the deep
# profile.

SENSITIVITY_BAR = QUANTIZED_MIN_SQNR


def rule_choice(pairs: list, table: dict, bar: float | None) -> list[str]:
    """The lesson's rule on plain data: the checks' own, not the reference's. `bar` None: the default, 20 dB."""
    bar = SENSITIVITY_BAR if bar is None else bar
    ranking = [name for name, _ in sorted(pairs, key=lambda pair: pair[1])]
    for kept in range(len(ranking) + 1):
        if table["base"] + sum(table["gains"][name] for name in ranking[:kept]) >= bar:
            return ranking[:kept]
    return ranking


def _table_text(pairs: list, table: dict, bar: float | None) -> str:
    bar_text = "left out (its default, 20)" if bar is None else f"{bar:g}"
    bar = SENSITIVITY_BAR if bar is None else bar
    ranking = [name for name, _ in sorted(pairs, key=lambda pair: pair[1])]
    lines = [f"  sensitivity = {[(n, v) for n, v in pairs]!r}",
             f"  model_sqnr(kept) = {table['base']:g} + the sum over the kept layers of {table['gains']!r}",
             f"  bar = {bar_text}", "  the ranking's starts measure: " + ", ".join(
                 f"{ranking[:k]!r} -> {table['base'] + sum(table['gains'][n] for n in ranking[:k]):g} dB"
                 for k in range(len(ranking) + 1))]
    return "\n".join(lines)


def _choice_problem(pairs: list, table: dict, bar: float | None, got, want: list[str]) -> str:
    text = _table_text(pairs, table, bar)
    bar = SENSITIVITY_BAR if bar is None else bar
    if isinstance(got, str):
        return f"choose_float_layers raised {got} on\n{text}\nREADME.md, 'When one layer ruins the model'."
    why = ""
    ranking = [name for name, _ in sorted(pairs, key=lambda pair: pair[1])]
    if set(got) == set(want) and got != want:
        why = " The right layers, in another order: return them as the ranking has them, the worst first."
    elif not want and got:
        why = (" The model reaches the bar with nothing kept float (the empty start of the ranking comes first): "
               "keep nothing float then.")
    elif len(got) == len(want) and sorted(v for n, v in pairs if n in got) == sorted(v for n, v in pairs
                                                                                       if n in want):
        why = (" Your layers have the same SQNRs as the right ones: equal SQNRs rank in the order the list gives "
               "them (graph order), not by name or the other way round. A stable sort on the SQNR alone does it.")
    elif (got == ranking[:len(got)] and len(got) > len(want)
          and table["base"] + sum(table["gains"][n] for n in got) >= bar):
        why = (f" Your start reaches the bar too, but {want!r} is a shorter one that does: the model's SQNR does not "
               f"always rise as layers stay float (here it falls, then rises), so a search that assumes it does "
               f"(bisection, or stopping where it falls) misses the first start. Try each start, shortest first.")
    elif got and all(v < bar for n, v in pairs if n in got) and all(v >= bar for n, v in pairs if n not in got):
        why = (" You kept every layer whose own SQNR is under the bar: the rule keeps the fewest, the worst first, "
               "until the MODEL reaches the bar; a layer under the bar alone may not be needed, and layers above it "
               "alone may add up to a model under it.")
    return (f"choose_float_layers returned {got!r}; the rule keeps {want!r}, on\n{text}\n"
            f"Rank the layers by their own SQNR, lowest first; try the empty start of that ranking, then its first "
            f"layer, its first two, ...; return the first start with which model_sqnr(kept) >= bar (every layer if "
            f"none). model_sqnr need not rise as more layers stay float: try every start in order.{why} README.md, "
            f"'When one layer ruins the model'.")


INF = math.inf
# (sensitivity, model_sqnr table, bar): one per axis of the rule
CHOICE_CASES = (
    # the model already reaches the bar: nothing float
    ([("linear", 12.0), ("add", 30.0)], {"base": 25.0, "gains": {"linear": 8.0, "add": 1.0}}, 20.0),
    # one layer; the worst first, in the middle, last in graph order; a Linear or an add
    ([("linear", 4.0), ("linear_1", 31.0), ("add", 28.0)], {"base": 9.0, "gains": {"linear": 14.0, "linear_1": 1.0,
                                                                                  "add": 1.0}}, 20.0),
    ([("linear", 33.0), ("add", 6.5), ("linear_1", 29.0)], {"base": 9.0, "gains": {"linear": 1.0, "add": 14.0,
                                                                                  "linear_1": 1.0}}, 20.0),
    ([("linear", 33.0), ("linear_1", 29.0), ("add", 36.0), ("linear_2", 3.0)],
     {"base": 7.0, "gains": {"linear": 1.0, "linear_1": 1.0, "add": 0.5, "linear_2": 20.0}}, 20.0),
    # several: three of five, the last one needed the least bad
    ([("add", 9.0), ("linear", 30.0), ("add_1", 11.5), ("linear_1", 14.0), ("linear_2", 40.0)],
     {"base": 6.0, "gains": {"add": 5.0, "linear": 0.5, "add_1": 5.0, "linear_1": 5.0, "linear_2": 0.0}}, 20.0),
    # a tie at the cut: equal SQNRs keep graph order (names that sort the other way)
    ([("linear_2", 10.0), ("add", 10.0), ("linear_10", 30.0)],
     {"base": 12.0, "gains": {"linear_2": 9.0, "add": 9.0, "linear_10": 0.0}}, 20.0),
    ([("linear", 35.0), ("add_1", 8.0), ("add", 8.0), ("linear_1", 8.0)],
     {"base": 5.0, "gains": {"linear": 0.0, "add_1": 8.0, "add": 8.0, "linear_1": 8.0}}, 20.0),
    # model_sqnr falls when the worst stays float, then rises: the first start that reaches the bar
    ([("add", 5.0), ("add_1", 8.0), ("linear", 30.0)], {"base": 15.0, "gains": {"add": -1.0, "add_1": 8.0,
                                                                               "linear": 0.0}}, 20.0),
    # the bar reached with the worst alone, lost with two, reached again with three: the first start, by trying each
    ([("linear", 4.0), ("add", 6.0), ("linear_1", 9.0), ("add_1", 30.0)],
     {"base": 15.0, "gains": {"linear": 6.0, "add": -3.0, "linear_1": 5.0, "add_1": 0.0}}, 20.0),
    # a layer under the bar alone that is not needed; layers above it alone that add up to a model under it
    ([("linear", 12.0), ("linear_1", 15.0), ("linear_2", 30.0)],
     {"base": 14.0, "gains": {"linear": 8.0, "linear_1": 3.0, "linear_2": 0.0}}, 20.0),
    ([("linear", 25.0), ("add", 22.0), ("linear_1", 30.0)],
     {"base": 18.0, "gains": {"linear": 1.0, "add": 3.0, "linear_1": 0.5}}, 20.0),
    # no start short of every layer reaches the bar
    ([("linear", 10.0), ("add", 12.0)], {"base": 10.0, "gains": {"linear": 0.0, "add": 0.0}}, 20.0),
    # a layer that changes nothing when quantized (inf) ranks last; another bar
    ([("linear", INF), ("add", 3.0)], {"base": 5.0, "gains": {"linear": 0.0, "add": 20.0}}, 20.0),
    ([("linear", 21.0), ("linear_1", 26.0), ("add", 24.0)],
     {"base": 22.0, "gains": {"linear": 4.0, "linear_1": 2.0, "add": 5.0}}, 30.0),
    # exactly at the bar counts as reaching it; the bar left out is 20 dB
    ([("linear", 12.0), ("add", 30.0)], {"base": 20.0, "gains": {"linear": 8.0, "add": 1.0}}, 20.0),
    ([("add", 6.0), ("linear", 9.0), ("add_1", 40.0)],
     {"base": 19.5, "gains": {"add": 0.5, "linear": 0.5, "add_1": 0.0}}, None),
)

CHOICE_NAMES = ("linear", "linear_1", "linear_2", "linear_10", "add", "add_1", "add_2", "add_11")


def sensitivity_tables():
    """(sensitivity, model_sqnr table, bar) drawn along every axis of the rule: 1 to 6 layers named as export names
    them (in an order that is not alphabetical), SQNRs from a small set (ties; inf), gains that may be negative
    (model_sqnr need not rise), a base under or over the bar, the bar 20 dB or another."""
    from hypothesis import strategies as st

    @st.composite
    def draw(pick):
        names = pick(st.permutations(CHOICE_NAMES))[:pick(st.integers(1, 6))]
        values = st.sampled_from([3.0, 8.5, 8.5, 14.0, 19.5, 20.0, 25.0, 40.0, INF])
        gains = st.sampled_from([-3.0, 0.0, 1.5, 4.0, 9.0, 15.0])
        pairs = [(name, pick(values)) for name in names]
        table = {"base": pick(st.sampled_from([5.0, 12.0, 19.0, 20.0, 24.0])),
                 "gains": {name: pick(gains) for name in names}}
        return pairs, table, pick(st.sampled_from([20.0, 20.0, 30.0]))

    return draw()


@CHECKS.check(stage="sensitivity", weight=2)
def choose_float_layers_keeps_the_fewest_worst_layers(ctx):
    "choose_float_layers: the shortest start of the ranking (lowest SQNR first, ties in graph order) that reaches the bar"
    answers = ctx.probe(probes.chosen, list(CHOICE_CASES))
    for (pairs, table, bar), got in zip(CHOICE_CASES, answers):
        want = rule_choice(pairs, table, bar)
        expect(got == want, _choice_problem(pairs, table, bar, got, want))

    def prop(case) -> None:
        pairs, table, bar = case
        got = ctx.probe(probes.chosen, [case])[0]
        want = rule_choice(pairs, table, bar)
        expect(got == want, _choice_problem(pairs, table, bar, got, want))

    fuzz(ctx, sensitivity_tables(), prop, describe=lambda case: _table_text(*case),
         max_examples=max(6, ctx.max_examples))


def pooled_sqnr(references: list, outputs: list) -> float:
    """SQNR of every output of every batch at once (flattened and concatenated), in float64."""
    signal = noise = 0.0
    for reference, output in zip(references, outputs):
        for a, b in zip(_leaves(reference), _leaves(output)):
            a, b = a.double(), b.double().reshape(a.shape)
            signal += float(a.pow(2).sum())
            noise += float((a - b).pow(2).sum())
    if noise == 0:
        return math.inf
    return 10 * math.log10(signal / noise) if signal > 0 else -math.inf


def eager_on(recipe, batches: list) -> list:
    model = probes.sensitivity_build(recipe)
    with torch.no_grad():
        return [model(*batch) for batch in batches]


def _failed_run(outputs: list, what: str, recipe) -> None:
    for out in outputs:
        if isinstance(out, str):
            raise CheckFailed(f"{what} of {model_text(recipe)} failed on a calibration batch:\n  {out[:500]}")


PLAN_TEXT = {"all 3x": "8 batches of 3 * randn", "the 8x batch first": "8 batches of randn, the first 8 * randn",
             "the 8x batch last": "8 batches of randn, the last 8 * randn"}
SENSITIVITY_CASES = (("last_two", "the 8x batch last"), ("middle_add", "all 3x"))
SENSITIVITY_DEEP = (("first_linear", "the 8x batch first"), ("none", "all 3x"), ("relu_between", "the 8x batch last"))


@CHECKS.check(stage="sensitivity", weight=2)
def layer_sensitivity_quantizes_each_layer_alone(ctx):
    "layer_sensitivity: every layer the Quantizer annotates, in graph order, with the model's SQNR when it alone is quantized"
    for name, plan in SENSITIVITY_CASES + (SENSITIVITY_DEEP if ctx.deep else ()):
        recipe = probes.SENSITIVITY_MODELS[name]
        seen = ctx.probe(probes.sensitivity, recipe, plan)
        got, layers = seen["sensitivity"], probes.chain_layers(recipe)
        where = f"layer_sensitivity on {model_text(recipe)}(calibration: {PLAN_TEXT[plan]})"
        expect(not isinstance(got, str), f"{where} returned {got}, not a list of (layer name, SQNR in dB) pairs. "
                                         f"README.md, 'When one layer ruins the model'.")
        expect([n for n, _ in got] == layers,
               f"{where} named the layers {[n for n, _ in got]!r}; the layers NPUQuantizer annotates are "
               f"{layers!r}: every linear and every add of two tensors, once each, in graph order, by the names of "
               f"their nodes in the exported graph (ep.module()). README.md, 'When one layer ruins the model'.")
        batches = probes.sensitivity_calibration(recipe, plan)
        references = eager_on(recipe, batches)
        for layer, value in got:
            outputs = seen["alone"][layer]
            _failed_run(outputs, f"your quantize_for_npu with every layer but {layer} kept float", recipe)
            want = pooled_sqnr(references, outputs)
            agree = value == want if math.isinf(want) else abs(value - want) <= SQNR_TOLERANCE_DB
            expect(agree,
                   f"{where} gave layer {layer} {value:.2f} dB. Your quantize_for_npu with every OTHER layer kept "
                   f"float (keep_float={[n for n in layers if n != layer]!r}), calibrated on those 8 batches, is "
                   f"{want:.2f} dB from the float model over all 8 of them (their outputs flattened and "
                   f"concatenated, the powers summed over every batch). A layer's sensitivity is what it costs "
                   f"alone: quantize that layer only, calibrate on every batch, and measure on every batch, not on "
                   f"one; the batches may come as a generator, so keep them in a list to use them again. "
                   f"README.md, 'When one layer ruins the model'.")
        sensitive = set(probes.chain_sensitive(recipe))
        for layer, value in got:
            expect((value < SENSITIVITY_BAR) == (layer in sensitive),
                   f"{where} gave layer {layer} {value:.2f} dB: "
                   + ("that layer's output has channels far below zero (see the model), so quantized alone it "
                      "rounds everything else away and the model falls under 20 dB."
                      if layer in sensitive else
                      "that layer has no outlier channels; quantized alone, it keeps the model above 20 dB. Are "
                      "the other layers still quantized when you measure it?")
                   + " README.md, 'When one layer ruins the model'.")


def _kept_nodes_float(recipe, keep, annotations: list[dict] | None, nodes: list[dict], what: str) -> None:
    """Each kept layer is unannotated (its riding relu too), present in the graph as its float op, reading a float
    weight; every other layer is annotated."""
    layers = probes.chain_layers(recipe) if probes.is_chain(recipe) else None
    if annotations is not None:
        by_name = {n["name"]: n for n in annotations}
        for layer in layers:
            node = by_name[layer]
            riders = [by_name[u] for u in node["users"] if by_name.get(u, {}).get("target") in RELU_TARGETS]
            if layer in keep:
                marked = [n["name"] for n in [node] + (riders if len(node["users"]) == 1 else []) if n["annotated"]]
                expect(not marked,
                       f"NPUQuantizer(keep_float={list(keep)!r}).annotate on {model_text(recipe)} annotated "
                       f"{', '.join(marked)}. A layer kept float carries no annotation: not its inputs, not its "
                       f"weight, not its output, and not the relu that would ride on it (the int8 linear applies "
                       f"that relu; a float linear does not). README.md, 'When one layer ruins the model'.")
            else:
                expect(node["annotated"],
                       f"NPUQuantizer(keep_float={list(keep)!r}).annotate on {model_text(recipe)} left {layer} "
                       f"unannotated; only the layers named in keep_float stay float, every other one is annotated "
                       f"as in Step 1. README.md, 'When one layer ruins the model'.")
    by_name = {n["name"]: n for n in nodes}
    for layer in keep:
        node = by_name.get(layer)
        expect(node is not None and node["target"] in ("aten.linear.default", *ADD_TARGETS),
               f"{what} of {model_text(recipe)} has no float node {layer} left: kept float, it stays in the graph "
               f"as its aten op and runs on the CPU: {ops_text(nodes)}. README.md, 'When one layer ruins the "
               f"model'.")
        if node["target"] == "aten.linear.default":
            weight = by_name.get(node["args"][1]) if isinstance(node["args"][1], str) else None
            expect(weight is None or not weight["target"].startswith(QDQ_PREFIX),
                   f"{layer} in {what} of {model_text(recipe)} reads its weight through {weight and weight['name']} "
                   f"({weight and ops_text([weight])}): a layer kept float has a float weight, not an int8 one "
                   f"dequantized. README.md, 'When one layer ruins the model'.")


def _layer_counts(recipe, keep) -> tuple[int, int]:
    layers = [n for n in probes.chain_layers(recipe) if n not in keep]
    return sum(n.startswith("linear") for n in layers), sum(n.startswith("add") for n in layers)


@CHECKS.check(stage="sensitivity", weight=2)
def kept_float_layers_stay_float_and_the_rest_run_int8(ctx):
    "quantize_for_npu(keep_float=...): the named layers stay float on the CPU, their neighbours still run int8 on the NPU"
    for name, keep in probes.KEEP_FLOAT_CASES:
        recipe = probes.SENSITIVITY_MODELS[name]
        DEVICE.reset()
        seen = ctx.probe(probes.kept_float, recipe, keep)
        quantized = f"your quantize_for_npu(keep_float={list(keep)!r})"
        what = f"{quantized} then lower_to_npu_int8"
        expect(seen["type"] == "GraphModule", f"{what} returned a {seen['type']}, not a GraphModule.")
        _kept_nodes_float(recipe, keep, seen["annotations"], seen["quantized_nodes"], what=f"the graph of {quantized}")
        expect_runs(recipe, seen)
        linears, adds = _layer_counts(recipe, keep)
        expect_launches(recipe, seen["nodes"], linears, adds, what=f"the graph of {what}",
                        given=seen["quantized_nodes"],  # run on the evaluation and the calibration batches
                        runs=len(probes.EVAL_BATCHES) + len(probes.sensitivity_calibration(recipe)))
        _kept_nodes_float(recipe, keep, None, seen["nodes"], what=f"the graph of {what}")
        _failed_run(seen["calibration_outputs"], f"the graph of {quantized}", recipe)
        _failed_run(seen["lowered_calibration_outputs"], f"the graph of {what}", recipe)
        lowered = pooled_sqnr(seen["calibration_outputs"], seen["lowered_calibration_outputs"])
        expect(lowered >= LOWERED_MIN_SQNR,
               f"the graph of {what} on {model_text(recipe)} is {lowered:.1f} dB from the graph your quantize_for_npu "
               f"made, over the calibration batches; the same int8 arithmetic should keep {LOWERED_MIN_SQNR:.0f} dB. "
               f"README.md, 'Step 3'.")
        if set(probes.chain_sensitive(recipe)) <= set(keep):
            _failed_run(seen["calibration_outputs"], f"the graph of {quantized}", recipe)
            value = pooled_sqnr(eager_on(recipe, probes.sensitivity_calibration(recipe)), seen["calibration_outputs"])
            expect(value >= SENSITIVITY_BAR,
                   f"the graph of {quantized} on {model_text(recipe)} is {value:.1f} dB from the float model over its "
                   f"calibration batches; with the layers whose outliers round the rest away kept float, the others "
                   f"quantize well: at least {SENSITIVITY_BAR:.0f} dB. README.md, 'When one layer ruins the model'.")


WITH_SENSITIVITY = ("last_two", "none")
WITH_SENSITIVITY_DEEP = ("first_linear", "middle_add")
REAL_SENSITIVITY_DEEP = ("mobilenet",)


def real_layers(recipe) -> list[str]:
    """The layers of a real model's exported graph: its linear nodes and its adds of two tensors, in graph order."""
    graph = probes.spec_exported_chain(recipe).graph
    return [n.name for n in graph.nodes if n.op == "call_function" and (
        n.target is torch.ops.aten.linear.default or (n.target in (torch.ops.aten.add.Tensor, torch.ops.aten.add_.Tensor)
                                                      and all(isinstance(a, torch.fx.Node) for a in n.args[:2])))]


@CHECKS.check(stage="sensitivity", weight=2)
def quantize_with_sensitivity_reaches_the_bar(ctx):
    "quantize_with_sensitivity: the fewest worst layers kept float, the model at or above 20 dB, the rest int8 on the NPU"
    recipes = [probes.SENSITIVITY_MODELS[n] for n in WITH_SENSITIVITY + (WITH_SENSITIVITY_DEEP if ctx.deep else ())]
    recipes += [probes.real_recipe(n) for n in (REAL_SENSITIVITY_DEEP if ctx.deep else ())]
    for recipe in recipes:
        DEVICE.reset()
        seen = ctx.probe(probes.with_sensitivity, recipe)
        what = "your quantize_with_sensitivity"
        expect(seen["type"] == "GraphModule", f"{what} (then lower_to_npu_int8) returned a {seen['type']}, not a "
                                              f"(GraphModule, list of layer names) pair. README.md, 'When one layer "
                                              f"ruins the model'.")
        kept = seen["kept"]
        if probes.is_chain(recipe):
            want = probes.chain_sensitive(recipe)
            expect(kept == want,
                   f"{what} kept {kept!r} float on {model_text(recipe)}; the rule keeps {want!r}: "
                   + ("the model quantized whole already reaches 20 dB, so nothing stays float."
                      if not want else
                      "the layers whose outlier channels round the rest away, the worst first, and no more: with "
                      "fewer the model stays under 20 dB, and every other layer quantizes well.")
                   + " README.md, 'When one layer ruins the model'.")
            _kept_nodes_float(recipe, kept, None, seen["quantized_nodes"], what=f"the graph of {what}")
            linears, adds = _layer_counts(recipe, kept)
        else:
            layers = real_layers(recipe)
            expect(set(kept) <= set(layers),
                   f"{what} on {model_text(recipe)} kept {kept!r} float; its layers are {layers!r} (the linear and "
                   f"add nodes of the exported graph). README.md, 'When one layer ruins the model'.")
            _kept_nodes_float(recipe, kept, None, seen["quantized_nodes"], what=f"the graph of {what}")
            linears = sum(n.startswith("linear") for n in layers if n not in kept)
            adds = sum(n.startswith("add") for n in layers if n not in kept)
        got = (count(seen["nodes"], probes.INT8_LINEAR), count(seen["nodes"], probes.INT8_ADD))
        expect(got == (linears, adds),
               f"{what}'s graph of {model_text(recipe)}, lowered, holds {got[0]} int8_linear and {got[1]} int8_add; "
               f"with {kept!r} kept float, the other layers are {linears} linear(s) and {adds} add(s), each one "
               f"int8 op on the NPU. README.md, 'When one layer ruins the model'.")
        batches = probes.sensitivity_calibration(recipe)
        references = eager_on(recipe, batches)
        for key, label in (("quantized_outputs", "your quantized graph"), ("outputs", "the lowered graph")):
            _failed_run(seen[key], label, recipe)
        value = pooled_sqnr(references, seen["quantized_outputs"])
        expect(value >= SENSITIVITY_BAR,
               f"{what} on {model_text(recipe)} kept {kept!r} float, and its graph is {value:.1f} dB from the float "
               f"model over the calibration batches, under the bar of {SENSITIVITY_BAR:.0f} dB: keep the worst "
               f"layers float until the model reaches the bar. README.md, 'When one layer ruins the model'.")
        lowered = pooled_sqnr(seen["quantized_outputs"], seen["outputs"])
        expect(lowered >= LOWERED_MIN_SQNR,
               f"{what}'s graph of {model_text(recipe)}, lowered by your lower_to_npu_int8, is {lowered:.1f} dB from "
               f"the graph it was given: the same int8 arithmetic should keep {LOWERED_MIN_SQNR:.0f} dB. README.md, "
               f"'Step 3'.")
