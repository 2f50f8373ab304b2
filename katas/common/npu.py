"""The simulated NPU: which ops it runs (NPU_OPS), how graphs are compiled for it and run on it, and the
device's statistics. Katas 4 and 5 read this file; it is the ground truth.

NPU_OPS holds canonical op names: the ATen op each node becomes, without namespace or overload
(`aten.addmm.default` -> "addmm", nn.Linear / F.linear / aten.linear -> "linear"). Everything else runs
on the CPU.

How the device behaves, in the order a backend meets it:

- `NPU.compile(gm, example_inputs, name=None) -> NPUProgram` accepts an FX graph lowered to ATen: every
  compute node calls an `aten` (or `kata`) OpOverload whose canonical name is in NPU_OPS, with its
  functional (not in-place, not `out=`) overload. Inputs must be tensors of a static shape (no SymInt) and
  an NPU dtype (float32, float16, bfloat16 — not float64). Anything else raises `NPUCompileError`, which
  names the node and the reason. Compiling runs every kernel once on `meta` tensors, so a graph the NPU
  accepts is a graph it can run.
- `program(*tensors)` runs the graph node by node with the NPU's own kernels (`KERNELS`, keyed by canonical
  op). Each compute node is one launch; a fused `kata.linear_gelu` is one launch; layout ops (t, permute,
  transpose, view, reshape) run but cost no launch, because the NPU folds them into how the next kernel
  reads memory. Inputs are copied to the device and outputs back, and both directions are counted. It
  raises `NPURuntimeError` when an input's shape or dtype differs from the one compiled for, or when a fault
  was injected with `DEVICE.inject_fault(n)`.
- `DEVICE` (the one NPU) keeps `DEVICE.stats`: programs compiled, compile errors, runs, runtime errors,
  launches, every node that ran, ops run by canonical name, bytes each way and an estimated time.
  `DEVICE.reset()` zeroes them.
- `NPUFallbackWarning` is the warning category a backend uses whenever work it meant for the NPU runs on
  the CPU instead.
"""
from __future__ import annotations

import inspect
import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch
import torch.fx
import torch.nn.functional as F

NPU_OPS = frozenset({
    "linear", "addmm", "mm", "matmul", "t", "permute", "transpose", "view", "reshape",
    "gelu", "relu", "sigmoid", "tanh", "silu", "add", "mul", "linear_gelu",
})

NPU_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

# Layout ops change how a buffer is indexed, not its contents: they run inside the next kernel, no launch.
LAYOUT_OPS = frozenset({"t", "permute", "transpose", "view", "reshape"})

# The cost model: a launch has a fixed overhead, data crosses the host boundary at a fixed bandwidth, and the
# matrix unit does a fixed number of multiply-adds per microsecond. Rough, but it ranks plans the right way.
LAUNCH_OVERHEAD_US = 5.0
HOST_BYTES_PER_US = 8_000.0
FLOPS_PER_US = 2_000_000.0

_OP_NAMESPACES = ("aten", "kata")


class NPUCompileError(RuntimeError):
    """The NPU cannot compile a graph. `node` names the node at fault, `reason` says why."""

    def __init__(self, node: str, reason: str) -> None:
        super().__init__(f"NPU cannot compile node {node!r}: {reason}")
        self.node = node
        self.reason = reason


class NPURuntimeError(RuntimeError):
    """A compiled program could not run: an input differs from what it was compiled for, or the device faulted."""


class NPUFallbackWarning(UserWarning):
    """Work meant for the NPU ran on the CPU. A backend warns with this category, naming what and why."""


# --- kernels ---------------------------------------------------------------------------------------------
# One kernel per canonical op, called with the op's arguments by schema name. They compute with torch on the
# host's memory (this is a simulation) but they are the NPU's own: they never call the graph's targets.

def _matmul_flops(out: torch.Tensor, inner: int) -> int:
    return 2 * out.numel() * inner


KERNELS: dict[str, Callable[..., torch.Tensor]] = {
    "linear": lambda input, weight, bias=None: F.linear(input, weight, bias),
    "addmm": lambda self, mat1, mat2, beta=1, alpha=1: torch.addmm(self, mat1, mat2, beta=beta, alpha=alpha),
    "mm": lambda self, mat2: torch.mm(self, mat2),
    "matmul": lambda self, other: torch.matmul(self, other),
    "t": lambda self: self.t(),
    "permute": lambda self, dims: self.permute(dims),
    "transpose": lambda self, dim0, dim1: self.transpose(dim0, dim1),
    "view": lambda self, size: self.view(size),
    "reshape": lambda self, shape: self.reshape(shape),
    "gelu": lambda self, approximate="none": F.gelu(self, approximate=approximate),
    "relu": lambda self: torch.relu(self),
    "sigmoid": lambda self: torch.sigmoid(self),
    "tanh": lambda self: torch.tanh(self),
    "silu": lambda self: F.silu(self),
    "add": lambda self, other, alpha=1: torch.add(self, other, alpha=alpha),
    "mul": lambda self, other: torch.mul(self, other),
    "linear_gelu": lambda x, weight, bias=None, approximate="none": F.gelu(F.linear(x, weight, bias),
                                                                           approximate=approximate),
}
if set(KERNELS) != NPU_OPS:  # pragma: no cover - a guard for whoever edits the table
    raise AssertionError(f"kernels and NPU_OPS disagree: {sorted(set(KERNELS) ^ NPU_OPS)}")

# which argument holds the contracted dimension, for the cost model
_INNER_DIM = {"linear": ("weight", -1), "linear_gelu": ("weight", -1), "addmm": ("mat1", -1),
              "mm": ("self", -1), "matmul": ("self", -1)}


def canonical_name(target: Any) -> str | None:
    """`aten.addmm.default` -> "addmm", `kata.linear_gelu.default` -> "linear_gelu"; None if not an OpOverload."""
    if isinstance(target, torch._ops.OpOverload):
        return target.overloadpacket.__name__
    return None


def _target_text(node: torch.fx.Node) -> str:
    target = node.target
    if isinstance(target, (torch._ops.OpOverload, str)):
        return str(target)
    return f"{getattr(target, '__module__', '') or ''}.{getattr(target, '__name__', repr(target))}".lstrip(".")


def _nbytes(value: Any) -> int:
    return sum(t.numel() * t.element_size() for t in _tensors(value))


def _tensors(value: Any) -> list[torch.Tensor]:
    return [v for v in torch.utils._pytree.tree_leaves(value) if isinstance(v, torch.Tensor)]


def _describe_tensor(t: Any) -> str:
    if isinstance(t, torch.Tensor):
        return f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}"
    return type(t).__name__


# --- statistics ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NodeRun:
    """One graph node executed on the NPU: the program it belongs to, the node's name, its ATen target."""

    program: str
    node: str
    target: str


@dataclass
class NPUStats:
    programs_compiled: int = 0
    compile_errors: list[str] = field(default_factory=list)  # the message of every NPUCompileError raised
    runs: int = 0  # program executions that completed
    runtime_errors: list[str] = field(default_factory=list)  # the message of every NPURuntimeError raised
    launches: int = 0
    ops_run: Counter = field(default_factory=Counter)  # canonical op -> times run (layout ops included)
    nodes_run: list[NodeRun] = field(default_factory=list)
    bytes_to_device: int = 0
    bytes_from_device: int = 0
    estimated_us: float = 0.0

    def summary(self) -> str:
        """One paragraph a person can read in a failure message."""
        ops = ", ".join(f"{op} x{n}" for op, n in sorted(self.ops_run.items())) or "none"
        compiled = f"{self.programs_compiled} program(s) compiled, " if self.programs_compiled else ""
        text = (f"{compiled}{self.runs} program run(s), {self.launches} launch(es); ops run on the NPU: {ops}; "
                f"{self.bytes_to_device} B to the device, {self.bytes_from_device} B back; "
                f"estimated {self.estimated_us:.1f} us")
        if self.compile_errors:
            text += f"; {len(self.compile_errors)} compile error(s), first: {self.compile_errors[0]}"
        if self.runtime_errors:
            text += f"; {len(self.runtime_errors)} runtime error(s), first: {self.runtime_errors[0]}"
        return text


class NPUDevice:
    """The one simulated NPU (`DEVICE`): statistics, fault injection, and whether a program is running."""

    def __init__(self) -> None:
        self.stats = NPUStats()
        self.busy = False  # True while a program executes (host-side observers use it to tell NPU from CPU work)
        self._faults_pending = 0
        self._program_ids = itertools.count()

    def reset(self) -> None:
        """Zero the statistics and cancel pending faults. Compiled programs stay valid."""
        self.stats = NPUStats()
        self._faults_pending = 0

    def inject_fault(self, n: int = 1) -> None:
        """Make the next `n` program runs raise NPURuntimeError (a transient device fault)."""
        if n < 0:
            raise ValueError("inject_fault(n) needs n >= 0")
        self._faults_pending += n

    def _take_fault(self) -> bool:
        if self._faults_pending:
            self._faults_pending -= 1
            return True
        return False


DEVICE = NPUDevice()


# --- compiling -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Step:
    """A compute node, ready to run: its kernel and its arguments by schema name (graph nodes as refs)."""

    node: str
    target: str
    op: str
    kernel: Callable[..., Any]
    kwargs: dict[str, Any]


def _bind(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The node's arguments by schema name, defaults filled in."""
    bound: dict[str, Any] = {}
    for i, argument in enumerate(op._schema.arguments):
        if i < len(args) and not argument.kwarg_only:
            bound[argument.name] = args[i]
        elif argument.name in kwargs:
            bound[argument.name] = kwargs[argument.name]
        elif argument.has_default_value():
            bound[argument.name] = argument.default_value
    return bound


def _check_op(node: torch.fx.Node) -> str:
    """The canonical op of a compute node the NPU can run; NPUCompileError saying why not otherwise."""
    if node.op in ("call_module", "call_method"):
        raise NPUCompileError(node.name, f"{node.op} {_target_text(node)!s} is not an ATen op; the NPU compiles "
                                         f"graphs lowered to ATen (aot_autograd or make_fx), not Module- or "
                                         f"torch-level graphs")
    if not isinstance(node.target, torch._ops.OpOverload) or node.target.namespace not in _OP_NAMESPACES:
        raise NPUCompileError(node.name, f"{_target_text(node)} is not an ATen op; the NPU compiles graphs "
                                         f"lowered to ATen (aot_autograd or make_fx)")
    op = canonical_name(node.target)
    if op not in NPU_OPS:
        raise NPUCompileError(node.name, f"{node.target} is not in NPU_OPS ({op!r} has no NPU kernel)")
    if node.target._schema.is_mutable:
        raise NPUCompileError(node.name, f"{node.target} writes into its arguments; the NPU runs only "
                                         f"functional overloads")
    return op


def _check_input(node: torch.fx.Node, value: Any, users: str) -> None:
    if not isinstance(value, torch.Tensor):
        kind = "a symbolic integer (dynamic shapes)" if isinstance(value, torch.SymInt) else type(value).__name__
        raise NPUCompileError(node.name, f"input {node.name} is {kind}; NPU programs take tensors of static shape")
    if any(not isinstance(size, int) for size in value.shape):
        raise NPUCompileError(node.name, f"input {node.name} has the symbolic shape {tuple(value.shape)}; NPU "
                                         f"programs have static shapes")
    if value.dtype not in NPU_DTYPES:
        names = ", ".join(str(d).removeprefix("torch.") for d in NPU_DTYPES)
        raise NPUCompileError(node.name, f"input {node.name}{users} is {str(value.dtype).removeprefix('torch.')}; "
                                         f"the NPU runs {names}")


def _users_text(node: torch.fx.Node) -> str:
    users = [u.name for u in node.users if u.op != "output"]
    return f" (read by {', '.join(users[:3])})" if users else ""


def _to_meta(value: Any) -> Any:
    return torch.empty(value.shape, dtype=value.dtype, device="meta") if isinstance(value, torch.Tensor) else value


class NPU:
    """The compiler for the simulated NPU. `NPU.compile(gm, example_inputs)` -> an `NPUProgram`."""

    @staticmethod
    def compile(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], name: str | None = None) -> "NPUProgram":
        """Compile an ATen-level graph for the NPU; NPUCompileError (naming the node) if it cannot run there.

        `example_inputs` give each placeholder's shape and dtype (real or fake tensors both work); the program
        accepts exactly those shapes and dtypes.
        """
        try:
            program = NPUProgram._build(gm, list(example_inputs), name or f"npu_program_{next(DEVICE._program_ids)}")
        except NPUCompileError as error:
            DEVICE.stats.compile_errors.append(str(error))
            raise
        DEVICE.stats.programs_compiled += 1
        return program


class NPUProgram:
    """A graph compiled for the NPU. Call it with host tensors; it returns host tensors, shaped like the graph's output."""

    def __init__(self) -> None:  # built by NPU.compile only
        raise TypeError("use NPU.compile(gm, example_inputs) to make an NPUProgram")

    @classmethod
    def _build(cls, gm: torch.fx.GraphModule, example_inputs: list, name: str) -> "NPUProgram":
        self = object.__new__(cls)
        self.name = name
        graph = gm.graph
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(example_inputs):
            raise NPUCompileError(name, f"the graph has {len(placeholders)} inputs but {len(example_inputs)} "
                                        f"example inputs were given")
        for node, value in zip(placeholders, example_inputs):
            _check_input(node, value, _users_text(node))
        self.placeholders = [n.name for n in placeholders]
        self.input_specs = [(tuple(v.shape), v.dtype) for v in example_inputs]

        self.constants: dict[str, torch.Tensor] = {}
        self.steps: list[_Step] = []
        output = None
        for node in graph.nodes:
            if node.op == "get_attr":
                value = torch.fx.graph_module._get_attr(gm, node.target)  # noqa: SLF001 - the documented lookup helper
                _check_input(node, value, _users_text(node))
                self.constants[node.name] = value.detach()
            elif node.op in ("call_function", "call_module", "call_method"):
                op = _check_op(node)
                kwargs = _bind(node.target, node.args, node.kwargs)
                kernel = KERNELS[op]
                try:
                    inspect.signature(kernel).bind(**kwargs)
                except TypeError:
                    raise NPUCompileError(node.name, f"the overload {node.target} ({node.target._schema}) has no "
                                                     f"NPU kernel") from None
                self.steps.append(_Step(node.name, str(node.target), op, kernel, kwargs))
            elif node.op == "output":
                output = node.args[0]
        self.output = output
        self.launches = sum(1 for step in self.steps if step.op not in LAYOUT_OPS)
        self._estimate(example_inputs)
        return self

    def _estimate(self, example_inputs: list) -> None:
        """Run every kernel on meta tensors: proves the program runs, and sizes the cost estimate."""
        env = {name: _to_meta(v) for name, v in zip(self.placeholders, example_inputs)}
        env.update({name: _to_meta(v) for name, v in self.constants.items()})
        flops = 0
        for step in self.steps:
            kwargs = torch.fx.node.map_arg(step.kwargs, lambda n: env[n.name])
            try:
                out = step.kernel(**kwargs)
            except Exception as error:  # noqa: BLE001 - any kernel failure is a compile error for that node
                raise NPUCompileError(step.node, f"the {step.op} kernel rejects these arguments: {error}") from None
            if isinstance(out, torch.Tensor) and out.dtype not in NPU_DTYPES:
                raise NPUCompileError(step.node, f"produces {out.dtype}, not an NPU dtype")
            env[step.node] = out
            if step.op in _INNER_DIM:
                arg, dim = _INNER_DIM[step.op]
                flops += _matmul_flops(out, kwargs[arg].shape[dim])
            elif step.op not in LAYOUT_OPS:
                flops += out.numel()
        outputs = torch.fx.node.map_arg(self.output, lambda n: env[n.name])
        self.bytes_in = sum(_nbytes(v) for v in example_inputs)
        self.bytes_out = _nbytes(outputs)
        self.estimated_us = (self.launches * LAUNCH_OVERHEAD_US + flops / FLOPS_PER_US
                             + (self.bytes_in + self.bytes_out) / HOST_BYTES_PER_US)
        DEVICE.stats.bytes_to_device += sum(_nbytes(v) for v in self.constants.values())  # uploaded once

    def __repr__(self) -> str:
        ops = ", ".join(step.op for step in self.steps)
        return f"NPUProgram({self.name!r}: {ops}; {self.launches} launch(es))"

    def _check_args(self, args: tuple) -> None:
        if len(args) != len(self.input_specs):
            raise NPURuntimeError(f"{self.name}: called with {len(args)} inputs, compiled for {len(self.input_specs)}")
        for i, (arg, (shape, dtype)) in enumerate(zip(args, self.input_specs)):
            if not isinstance(arg, torch.Tensor) or tuple(arg.shape) != shape or arg.dtype != dtype:
                raise NPURuntimeError(
                    f"{self.name}: input {i} ({self.placeholders[i]}) is {_describe_tensor(arg)}, but the program was "
                    f"compiled for {shape} {str(dtype).removeprefix('torch.')}; NPU programs have static shapes")

    def __call__(self, *args: torch.Tensor) -> Any:
        if DEVICE._take_fault():
            error = NPURuntimeError(f"{self.name}: device fault (injected with DEVICE.inject_fault)")
            DEVICE.stats.runtime_errors.append(str(error))
            raise error
        try:
            self._check_args(args)
        except NPURuntimeError as error:
            DEVICE.stats.runtime_errors.append(str(error))
            raise
        stats = DEVICE.stats
        DEVICE.busy = True
        try:
            with torch.no_grad():
                env = {name: arg.detach() for name, arg in zip(self.placeholders, args)}
                env.update(self.constants)
                for step in self.steps:
                    env[step.node] = step.kernel(**torch.fx.node.map_arg(step.kwargs, lambda n: env[n.name]))
                    stats.ops_run[step.op] += 1
                    stats.nodes_run.append(NodeRun(self.name, step.node, step.target))
                # results are copied back to host memory: they never alias the program's inputs
                outputs = torch.fx.node.map_arg(self.output, lambda n: env[n.name])
                outputs = torch.utils._pytree.tree_map_only(torch.Tensor, torch.clone, outputs)
        finally:
            DEVICE.busy = False
        stats.runs += 1
        stats.launches += self.launches
        stats.bytes_to_device += self.bytes_in
        stats.bytes_from_device += self.bytes_out
        stats.estimated_us += self.estimated_us
        return outputs
