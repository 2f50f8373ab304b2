"""The NPU's ahead-of-time runtime: a program format, and the one op a saved ExportedProgram calls to run it.

A delegate (kata 8) replaces each NPU partition of an exported graph with one call

    torch.ops.npu_aot.run_program(program: str, inputs: list[Tensor]) -> list[Tensor]

where `program = pack(partition_graph_module)` is the partition itself, serialised as text. Because the program
travels inside the graph as a string argument, `torch.export.save` stores it and `torch.export.load` brings it
back in any process that has imported this module (which registers the op): nothing lives only in the memory of
the process that lowered the model.

- `pack(gm) -> str` accepts a graph of `placeholder`, `call_function` (an `aten` OpOverload or
  `operator.getitem`), `get_attr` (a tensor: it becomes a constant of the program, copied into the text) and
  `output` nodes. Anything else raises `ProgramFormatError`, naming the node.
- The op's real kernel compiles the program for the shapes and dtypes of the inputs it is called with
  (`NPU.compile`: the device is shape-static), keeps every compiled program while the device has room (when its
  program memory is full, the one used longest ago is released), and runs it: a new batch size is one more
  compile, never a wrong answer. No smaller cap of its own: a saved ResNet-18 calls 18 programs per input shape,
  and a runtime keeping fewer would compile every one of them again on every call. Its fake kernel runs the
  graph on the fake inputs, so export, `torch.export.load` and symbolic sizes see the right output shapes.
- `replay_main()` (run as `python -c "from katas.common.npu.aot import replay_main; replay_main()"`, stdin: JSON
  naming saved programs and inputs) loads each program in a
  fresh process, runs it, and prints the outputs and the device's statistics as JSON: the checks' proof that a
  saved program runs outside the process that made it.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import operator
import sys
from typing import Any

import torch
import torch.fx

from katas.common import npu

FORMAT = "fx-katas-npu-program"
VERSION = 1
KEPT_PROGRAMS = None  # programs kept per process: as many as the device holds (KeptPrograms' least recently used rule)


class ProgramFormatError(ValueError):
    """A graph `pack` cannot serialise, or text `unpack` cannot read. The message names the node."""


# --- the format -----------------------------------------------------------------------------------------

def dump_tensors(value: Any) -> str:
    """Tensors (or a structure of them, a state dict) as text: torch.save, base64."""
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def load_tensors(text: str) -> Any:
    """What dump_tensors wrote, as real tensors even under an active fake mode (torch.load would make them fake:
    a program first read by the fake kernel must still hold real constants)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        return torch.load(io.BytesIO(base64.b64decode(text)), weights_only=True)


def _encode(value: Any, names: dict, where: str) -> Any:
    if isinstance(value, torch.fx.Node):
        return {"node": names[value]}
    if isinstance(value, (list, tuple)):
        return [_encode(v, names, where) for v in value]
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ProgramFormatError(f"{where}: an argument of type {type(value).__name__} ({value!r}) has no place in an "
                             f"NPU program (nodes, numbers, strings, dtypes and lists of them)")


def _decode(value: Any, env: dict) -> Any:
    if isinstance(value, dict):
        return env[value["node"]] if "node" in value else getattr(torch, value["dtype"])
    if isinstance(value, list):
        return [_decode(v, env) for v in value]
    return value


def _target_name(node: torch.fx.Node) -> str:
    if node.target is operator.getitem:
        return "getitem"
    if isinstance(node.target, torch._ops.OpOverload) and node.target.namespace == "aten":
        return str(node.target)  # "aten.linear.default"
    raise ProgramFormatError(f"node {node.name!r} calls {getattr(node.target, '__name__', node.target)}: an NPU "
                             f"program holds aten operators only (a partition of an exported graph)")


def _resolve(name: str) -> Any:
    if name == "getitem":
        return operator.getitem
    namespace, op, overload = name.split(".")
    if namespace != "aten":
        raise ProgramFormatError(f"{name}: not an aten operator")
    return getattr(getattr(getattr(torch.ops, namespace), op), overload)


def pack(gm: torch.fx.GraphModule) -> str:
    """The graph of `gm` as program text (JSON). Its placeholders, in order, are the program's inputs."""
    names: dict[torch.fx.Node, str] = {}
    nodes = []
    for node in gm.graph.nodes:
        names[node] = node.name
        where = f"node {node.name!r}"
        if node.op == "placeholder":
            nodes.append({"op": "input", "name": node.name})
        elif node.op == "get_attr":
            value = operator.attrgetter(node.target)(gm)
            if not isinstance(value, torch.Tensor):
                raise ProgramFormatError(f"{where} reads {node.target}, a {type(value).__name__}, not a tensor")
            nodes.append({"op": "constant", "name": node.name, "tensor": dump_tensors(value.detach().clone().contiguous())})
        elif node.op == "call_function":
            nodes.append({"op": "call", "name": node.name, "target": _target_name(node),
                          "args": _encode(list(node.args), names, where),
                          "kwargs": {k: _encode(v, names, where) for k, v in node.kwargs.items()}})
        elif node.op == "output":
            result = node.args[0]
            nodes.append({"op": "output", "values": _encode(list(result) if isinstance(result, (list, tuple))
                                                            else [result], names, where)})
        else:
            raise ProgramFormatError(f"{where} is a {node.op} node: an NPU program is one flat graph of aten calls")
    return json.dumps({"format": FORMAT, "version": VERSION, "nodes": nodes}, separators=(",", ":"))


_UNPACKED: dict[str, torch.fx.GraphModule] = {}


def unpack(text: str) -> torch.fx.GraphModule:
    """The GraphModule `pack` serialised (every output in one tuple). Cached per text: treat it as read-only."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    if digest in _UNPACKED:
        return _UNPACKED[digest]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProgramFormatError(f"not an NPU program (not JSON: {exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise ProgramFormatError(f"not an NPU program of format {FORMAT} version {VERSION}")
    root, graph, env = torch.nn.Module(), torch.fx.Graph(), {}
    for item in data["nodes"]:
        if item["op"] == "input":
            env[item["name"]] = graph.placeholder(item["name"])
        elif item["op"] == "constant":
            root.register_buffer(item["name"], load_tensors(item["tensor"]))
            env[item["name"]] = graph.get_attr(item["name"])
        elif item["op"] == "call":
            env[item["name"]] = graph.call_function(_resolve(item["target"]), tuple(_decode(item["args"], env)),
                                                    {k: _decode(v, env) for k, v in item["kwargs"].items()})
        else:
            graph.output(tuple(_decode(item["values"], env)))
    gm = torch.fx.GraphModule(root, graph)
    _UNPACKED[digest] = gm
    return gm


# --- the op ---------------------------------------------------------------------------------------------

_COMPILED = npu.KeptPrograms(KEPT_PROGRAMS)


def _signature(inputs: list[torch.Tensor]) -> tuple:
    return tuple((tuple(t.shape), t.dtype) for t in inputs)


def _compiled(program: str, inputs: list[torch.Tensor]) -> Any:
    """The NPU program for these input shapes: compiled once per signature and kept while it is resident."""
    key = (hashlib.sha256(program.encode()).hexdigest(), _signature(inputs))
    return _COMPILED.get(key, lambda: npu.NPU.compile(unpack(program), inputs, name=f"aot_{key[0][:8]}"))


def release_all() -> None:
    """Release every program this process compiled through `run_program`."""
    _COMPILED.release_all()


@torch.library.custom_op("npu_aot::run_program", mutates_args=())
def run_program(program: str, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Run the packed `program` on the NPU with `inputs` (its placeholders, in order); its outputs, in order."""
    return list(_compiled(program, list(inputs))(*inputs))


@run_program.register_fake
def _run_program_fake(program: str, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    from torch._guards import detect_fake_mode

    gm = unpack(program)
    mode = detect_fake_mode(inputs)
    constants = {name: mode.from_tensor(t) if mode is not None else t for name, t in gm.named_buffers()}
    env: dict[str, Any] = {}
    placeholders = iter(inputs)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            env[node.name] = next(placeholders)
        elif node.op == "get_attr":
            env[node.name] = constants[node.target]
        elif node.op == "call_function":
            args = torch.fx.node.map_arg(node.args, lambda n: env[n.name])
            kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n.name])
            env[node.name] = node.target(*args, **kwargs)
        else:
            return [t.clone() for t in torch.fx.node.map_arg(node.args[0], lambda n: env[n.name])]
    raise ProgramFormatError("an NPU program without an output node")


# --- replay in a fresh process ----------------------------------------------------------------------------

def replay(request: dict) -> dict:
    """Load each saved program named in `request` and run its cases, in this process.

    request: {"programs": [{"path": str, "cases": [{"inputs": <tensors>, "state": <state dict or null>}]}]},
    tensors as `dump_tensors` text. Returns {"programs": [{"error": str | None, "cases": [...],
    "launches": int, "programs_compiled": int, "ops_run": {op: count}}]}, each case {"outputs" | "error"}.
    """
    results = []
    for item in request["programs"]:
        npu.DEVICE.reset()
        entry: dict[str, Any] = {"error": None, "cases": []}
        try:
            loaded = torch.export.load(item["path"])
        except Exception as exc:  # noqa: BLE001 - any failure to load is the verdict itself
            entry["error"] = f"{type(exc).__name__}: {str(exc).strip()[:600]}"
        else:
            for case in item["cases"]:
                try:
                    module = loaded.module()
                    if case.get("state"):
                        module.load_state_dict(load_tensors(case["state"]), strict=False)
                    with torch.no_grad():
                        out = module(*load_tensors(case["inputs"]))
                    entry["cases"].append({"outputs": dump_tensors(out)})
                except Exception as exc:  # noqa: BLE001 - reported per case
                    entry["cases"].append({"error": f"{type(exc).__name__}: {str(exc).strip()[:600]}"})
        stats = npu.DEVICE.stats
        entry.update(launches=stats.launches, programs_compiled=stats.programs_compiled,
                     ops_run=dict(stats.ops_run))
        release_all()
        npu.DEVICE.release_all()
        results.append(entry)
    return {"programs": results}


REPLAY_COMMAND = "from katas.common.npu.aot import replay_main; replay_main()"


def replay_main() -> None:
    """`replay` of the request on stdin, its answer as JSON on stdout (a pipe only the caller holds)."""
    import warnings

    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    # what loading and unlifting a program import on first use (Dynamo among them, about 1.3 s), imported while
    # the caller is still lowering and saving: the request only arrives once the programs are on disk
    import importlib

    for module in ("torch._dynamo", "torch._export.serde.serialize", "torch.export._unlift",
                   "torch.export.pt2_archive._package"):
        importlib.import_module(module)

    answer = json.dumps(replay(json.load(sys.stdin)))
    sys.stdout.write(answer)
    sys.stdout.flush()
