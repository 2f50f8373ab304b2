"""The simulated NPU: which ops it runs (NPU_OPS), how graphs are compiled for it and run on it, and the
device's statistics. Katas 4 and 5 read this file; it is the ground truth.

NPU_OPS holds canonical op names: the ATen op each node becomes, without namespace or overload
(`aten.addmm.default` -> "addmm", nn.Linear / F.linear / aten.linear -> "linear"). Everything else runs
on the CPU.

How the device behaves, in the order a backend meets it. The API is shaped like a driver's: graphs and
tensors go in, program handles and tensors come back, and everything the device knows about itself is in
`DEVICE.stats`, plain data.

- `NPU.compile(gm, example_inputs, name=None) -> NPUProgram` accepts an FX graph lowered to ATen: every
  compute node calls an `aten` (or `kata`) OpOverload whose canonical name is in NPU_OPS, with its
  functional (not in-place, not `out=`) overload. Inputs must be tensors of a static shape (no SymInt) and
  an NPU dtype (float32, float16, bfloat16 — not float64), or plain Python ints (sizes the host computed:
  the program is specialised to their values). Anything else raises `NPUCompileError`, which names the
  node and the reason. Compiling runs every kernel once on `meta` tensors, so a graph the NPU accepts is a
  graph it can run.
- The graph's `get_attr` tensors are the program's *constants*: copied to the device once, at compile time
  (a copy: changing the host tensor later does not change the program), and never sent again.
- Program memory is finite: at most `DEVICE.max_resident_programs` (MAX_RESIDENT_PROGRAMS, 64) programs are
  resident at once. A program stays resident until `program.release()`, or until its last handle is
  garbage-collected. `NPU.compile` on a full device raises NPUCompileError ("program memory is full", with
  `.what == "program"`). `KeptPrograms` is a least-recently-used cache of programs that releases its oldest to
  make room.
- `program(*args)` runs the graph node by node with the NPU's own kernels (`KERNELS`, keyed by canonical
  op). Each compute node is one launch; a fused `kata.linear_gelu` is one launch; layout ops (t, permute,
  transpose, view, reshape) run but cost no launch, because the NPU folds them into how the next kernel
  reads memory. Tensor inputs are copied to the device and outputs back on every run, and both directions
  are counted. It raises `NPURuntimeError` when an input's shape, dtype or (for an int) value differs from
  the one compiled for, when the program was released, or when a fault was injected with
  `DEVICE.inject_fault(n)`.
- `DEVICE` (the one NPU) keeps `DEVICE.stats`: programs compiled, compile errors, runs, runtime errors,
  launches, every node that ran, ops run by canonical name, bytes each way (constants and per-run inputs
  apart), programs resident and released, and an estimated time. `DEVICE.reset()` zeroes the counters;
  `DEVICE.release_all()` empties program memory (every program on the device, other code's included).
  `DEVICE.free_program_slots()` says how many more programs fit now.
- The int8 mode (kata 9): two more kernels, `kata.int8_linear` and `kata.int8_add` (NPU_INT8_OPS, registered as
  ops by katas/common/npu/int8.py), compute on int8 tensors with integer arithmetic: products accumulate in
  int32, a float32 bias is rounded to int32 at the scale input_scale * weight_scale, and the result is
  requantized (rounded to nearest, ties to even) and *saturated* to [-128, 127]. Only these kernels take or
  make int8 tensors; every other kernel runs float.
- `NPUFallbackWarning` is the warning category a backend uses whenever work it meant for the NPU runs on
  the CPU instead.

Under the checker the device lives in the checks' process, not in the process that runs the attempt: there
`DEVICE` is a `DeviceClient` and compiling, running and releasing are requests to the real device
(`DeviceService`), so the counters the checks read are counted where the attempt's code cannot reach them.
A backend sees the same API either way.
"""
from __future__ import annotations

import gc
import inspect
import itertools
import weakref
from collections import Counter, OrderedDict
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

# How many compiled programs fit in the NPU's program memory at once. A real model cuts into 10-30 partitions
# (every CPU op between two NPU ops starts a new one), and each new input shape needs a program per partition:
# 64 holds two shapes of the tiny transformers in katas/common/real_models.py, not an unbounded workload. The
# checks also run backends on smaller NPUs (`NPUDevice(max_resident_programs=8)`): read the limit, do not assume it.
MAX_RESIDENT_PROGRAMS = 64

# Layout ops change how a buffer is indexed, not its contents: they run inside the next kernel, no launch.
LAYOUT_OPS = frozenset({"t", "permute", "transpose", "view", "reshape"})

# The cost model: a launch has a fixed overhead, data crosses the host boundary at a fixed bandwidth, and the
# matrix unit does a fixed number of multiply-adds per microsecond. Rough, but it ranks plans the right way.
LAUNCH_OVERHEAD_US = 5.0
HOST_BYTES_PER_US = 8_000.0
FLOPS_PER_US = 2_000_000.0

_OP_NAMESPACES = ("aten", "kata")


class NPUCompileError(RuntimeError):
    """The NPU cannot compile a graph. `node` names the node at fault (or the program, when the graph is fine but
    the device has no room for it), `reason` says why."""

    def __init__(self, node: str, reason: str, *, what: str = "node") -> None:
        super().__init__(f"NPU cannot compile {what} {node!r}: {reason}")
        self.node = node
        self.reason = reason
        self.what = what


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


# --- the int8 mode -----------------------------------------------------------------------------------------
# The NPU's integer unit. It runs exactly two ops, both `kata` ops; everything else the int8 mode meets stays
# float (on the NPU's float kernels or on the CPU). Integer math is done in int64 here, which equals the device's
# int32 accumulator for every shape it accepts (INT8_MAX_INNER below keeps the sum inside int32).

NPU_INT8_OPS = frozenset({"int8_linear", "int8_add"})
INT8_MIN, INT8_MAX = -128, 127
INT8_MAX_INNER = 32_768  # under 2**31 / (255 * 255): the longest dot product whose int32 sum cannot overflow


def requantize(values: torch.Tensor, multiplier: Any, zero_point: int) -> torch.Tensor:
    """round(values * multiplier) + zero_point, clamped into int8's range: rounded to nearest with ties to even and
    the zero point added after rounding, as quantized_decomposed.quantize_per_tensor does; saturated, not wrapped."""
    return (torch.round(values.to(torch.float64) * multiplier) + zero_point).clamp(INT8_MIN, INT8_MAX).to(torch.int8)


def _int8_operand(name: str, t: Any) -> torch.Tensor:
    if not isinstance(t, torch.Tensor) or t.dtype != torch.int8:
        raise ValueError(f"{name} must be an int8 tensor, not {_describe_value(t)}")
    return t.to(torch.int64)


def int8_linear_kernel(x, x_scale, x_zero_point, weight, weight_scale, bias=None, out_scale=1.0,
                       out_zero_point=0, relu=False):
    """y_q = requantize((x_q - x_zp) @ w_q.T + round(bias / (x_scale * w_scale)), x_scale * w_scale / out_scale,
    out_zp), then max(y_q, out_zp) when `relu`. Weights are symmetric (zero point 0), one scale per output
    channel (`weight_scale` has one entry per row of `weight`)."""
    x64, w64 = _int8_operand("x", x), _int8_operand("weight", weight)
    if w64.dim() != 2 or x64.shape[-1] != w64.shape[1]:
        raise ValueError(f"x {tuple(x.shape)} and weight {tuple(weight.shape)} do not chain")
    if w64.shape[1] > INT8_MAX_INNER:
        raise ValueError(f"an inner size of {w64.shape[1]} overflows the int32 accumulator")
    if tuple(weight_scale.shape) != (w64.shape[0],) or weight_scale.dtype != torch.float32:
        raise ValueError(f"weight_scale must be float32 of shape ({w64.shape[0]},), one scale per output channel, "
                         f"not {_describe_tensor(weight_scale)}")
    accumulator_scale = x_scale * weight_scale.to(torch.float64)
    acc = (x64 - x_zero_point) @ w64.T
    if bias is not None:
        acc = acc + torch.round(bias.to(torch.float64) / accumulator_scale).to(torch.int64)
    out = requantize(acc, accumulator_scale / out_scale, out_zero_point)
    return out.clamp(min=max(out_zero_point, INT8_MIN)) if relu else out


def int8_add_kernel(self, other, scale, zero_point, out_scale, out_zero_point):
    """out_q = requantize((a_q - zp) + (b_q - zp), scale / out_scale, out_zp): ONE scale and zero point for
    both inputs, which is why an add whose inputs were quantized differently cannot run here."""
    a64, b64 = _int8_operand("self", self), _int8_operand("other", other)
    total = (a64 - zero_point) + (b64 - zero_point)
    return requantize(total, scale / out_scale, out_zero_point)


INT8_KERNELS: dict[str, Callable[..., torch.Tensor]] = {"int8_linear": int8_linear_kernel,
                                                        "int8_add": int8_add_kernel}

# which argument holds the contracted dimension, for the cost model
_INNER_DIM = {"linear": ("weight", -1), "linear_gelu": ("weight", -1), "int8_linear": ("weight", -1),
              "addmm": ("mat1", -1), "mm": ("self", -1), "matmul": ("self", -1)}


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


def _describe_value(value: Any) -> str:
    return str(value) if type(value) is int else _describe_tensor(value)


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
    """Counters since the last `DEVICE.reset()`, plus the program memory's state (which a reset keeps)."""

    programs_compiled: int = 0
    compile_errors: list[str] = field(default_factory=list)  # the message of every NPUCompileError raised
    runs: int = 0  # program executions that completed
    runtime_errors: list[str] = field(default_factory=list)  # the message of every NPURuntimeError raised
    launches: int = 0
    ops_run: Counter = field(default_factory=Counter)  # canonical op -> times run (layout ops included)
    nodes_run: list[NodeRun] = field(default_factory=list)
    bytes_to_device: int = 0  # constant_bytes_to_device + input_bytes_to_device
    constant_bytes_to_device: int = 0  # programs' constants (get_attr tensors), uploaded once by NPU.compile
    input_bytes_to_device: int = 0  # tensor inputs, uploaded by every run
    bytes_from_device: int = 0
    estimated_us: float = 0.0
    programs_released: int = 0  # by program.release(), garbage collection or DEVICE.release_all()
    programs_resident: int = 0  # in program memory now (not a counter: DEVICE.reset() keeps it)
    release_all_calls: int = 0  # DEVICE.release_all() calls (under the checker an attempt's call is refused, and counted)
    max_resident_programs: int = MAX_RESIDENT_PROGRAMS

    def summary(self) -> str:
        """One paragraph a person can read in a failure message."""
        ops = ", ".join(f"{op} x{n}" for op, n in sorted(self.ops_run.items())) or "none"
        compiled = f"{self.programs_compiled} program(s) compiled, " if self.programs_compiled else ""
        constants = (f" ({self.constant_bytes_to_device} B of it constants)" if self.constant_bytes_to_device else "")
        text = (f"{compiled}{self.runs} program run(s), {self.launches} launch(es); ops run on the NPU: {ops}; "
                f"{self.bytes_to_device} B to the device{constants}, {self.bytes_from_device} B back; "
                f"{self.programs_resident} of {self.max_resident_programs} program slots in use; "
                f"estimated {self.estimated_us:.1f} us")
        if self.compile_errors:
            text += f"; {len(self.compile_errors)} compile error(s), first: {self.compile_errors[0]}"
        if self.runtime_errors:
            text += f"; {len(self.runtime_errors)} runtime error(s), first: {self.runtime_errors[0]}"
        return text


class NPUDevice:
    """The one simulated NPU (`DEVICE`): statistics, program memory, fault injection, and whether a program is
    running."""

    def __init__(self, max_resident_programs: int = MAX_RESIDENT_PROGRAMS) -> None:
        self.max_resident_programs = max_resident_programs
        self.busy = False  # True while the device compiles or runs a program (observers tell NPU from CPU work by it)
        self._faults_pending = 0
        self._program_ids = itertools.count()
        self._resident: set[int] = set()  # ids of the programs in program memory
        self.stats = NPUStats()
        self._sync_memory_stats()

    def reset(self) -> None:
        """Zero the statistics and cancel pending faults. Compiled programs stay valid and resident."""
        self.stats = NPUStats()
        self._faults_pending = 0
        self._sync_memory_stats()

    def release_all(self) -> None:
        """Empty program memory, as a device reset does: every program is released (calling one raises
        NPURuntimeError), whoever compiled it. Statistics are kept."""
        self.stats.release_all_calls += 1
        for program_id in list(self._resident):
            self._release(program_id)

    def free_program_slots(self) -> int:
        """How many more programs program memory holds now (programs whose last handle is unreachable garbage
        still hold their slot until the garbage collector frees them)."""
        return self.max_resident_programs - len(self._resident)

    def _sync_memory_stats(self) -> None:
        self.stats.programs_resident = len(self._resident)
        self.stats.max_resident_programs = self.max_resident_programs

    def _load(self, name: str, inputs: str) -> int:
        """A slot in program memory for the program `name` (compiled for `inputs`); NPUCompileError when memory
        stays full."""
        if len(self._resident) >= self.max_resident_programs:
            gc.collect()  # programs whose last handle is unreachable garbage are freed by their finalizers
        if len(self._resident) >= self.max_resident_programs:
            raise NPUCompileError(
                name, f"no room for a program for inputs {inputs}: the NPU's program memory is full "
                      f"({len(self._resident)} of {self.max_resident_programs} programs resident, "
                      f"DEVICE.max_resident_programs)", what="program")
        program_id = next(self._program_ids)
        self._resident.add(program_id)
        self._sync_memory_stats()
        return program_id

    def _release(self, program_id: int) -> None:
        if program_id in self._resident:
            self._resident.discard(program_id)
            self.stats.programs_released += 1
            self._sync_memory_stats()

    def _is_resident(self, program_id: int) -> bool:
        return program_id in self._resident

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
    if op not in NPU_OPS and not (op in NPU_INT8_OPS and node.target.namespace == "kata"):
        raise NPUCompileError(node.name, f"{node.target} is not in NPU_OPS ({op!r} has no NPU kernel)")
    if node.target._schema.is_mutable:
        raise NPUCompileError(node.name, f"{node.target} writes into its arguments; the NPU runs only "
                                         f"functional overloads")
    return op


def _check_input(node: torch.fx.Node, value: Any, users: str) -> None:
    if type(value) is int and node.op == "placeholder":
        return  # a size the host computed: the program is specialised to this value
    if not isinstance(value, torch.Tensor):
        kind = "a symbolic integer (dynamic shapes)" if isinstance(value, torch.SymInt) else type(value).__name__
        raise NPUCompileError(node.name, f"input {node.name} is {kind}; NPU programs take tensors of static shape")
    if any(not isinstance(size, int) for size in value.shape):
        raise NPUCompileError(node.name, f"input {node.name} has the symbolic shape {tuple(value.shape)}; NPU "
                                         f"programs have static shapes")
    if value.dtype == torch.int8 and node.users and all(_is_int8_op(user) for user in node.users):
        return  # int8 operands feed the integer unit
    if value.dtype not in NPU_DTYPES:
        names = ", ".join(str(d).removeprefix("torch.") for d in NPU_DTYPES)
        raise NPUCompileError(node.name, f"input {node.name}{users} is {str(value.dtype).removeprefix('torch.')}; "
                                         f"the NPU runs {names}")


def _is_int8_op(node: torch.fx.Node) -> bool:
    return isinstance(node.target, torch._ops.OpOverload) and canonical_name(node.target) in NPU_INT8_OPS


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
        name = name or f"npu_program_{next(_unnamed)}"
        if isinstance(DEVICE, DeviceClient):
            return DEVICE.compile(gm, list(example_inputs), name)
        DEVICE.busy = True  # compiling is the driver's work, not the model's host compute
        try:
            program = NPUProgram._build(gm, list(example_inputs), name)
            program._load()
        except NPUCompileError as error:
            DEVICE.stats.compile_errors.append(str(error))
            raise
        finally:
            DEVICE.busy = False
        DEVICE.stats.programs_compiled += 1
        return program


_unnamed = itertools.count()


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
        self.input_specs = [v if type(v) is int else (tuple(v.shape), v.dtype) for v in example_inputs]
        self.inputs_text = ", ".join(_describe_value(v) for v in example_inputs) or "none"
        self._id = None

        self.constants: dict[str, torch.Tensor] = {}
        self.steps: list[_Step] = []
        output = None
        for node in graph.nodes:
            if node.op == "get_attr":
                value = torch.fx.graph_module._get_attr(gm, node.target)  # noqa: SLF001 - the documented lookup helper
                _check_input(node, value, _users_text(node))
                self.constants[node.name] = value.detach().clone()  # the device's own copy
            elif node.op in ("call_function", "call_module", "call_method"):
                op = _check_op(node)
                kwargs = _bind(node.target, node.args, node.kwargs)
                kernel = KERNELS[op] if op in KERNELS else INT8_KERNELS[op]
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
            if isinstance(out, torch.Tensor) and out.dtype not in NPU_DTYPES and step.op not in NPU_INT8_OPS:
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
        self.constant_bytes = sum(_nbytes(v) for v in self.constants.values())
        self.estimated_us = (self.launches * LAUNCH_OVERHEAD_US + flops / FLOPS_PER_US
                             + (self.bytes_in + self.bytes_out) / HOST_BYTES_PER_US)

    def _load(self) -> None:
        """Take a slot in program memory and upload the constants, once."""
        self._id = DEVICE._load(self.name, self.inputs_text)
        weakref.finalize(self, DEVICE._release, self._id)  # a dropped handle frees its slot
        DEVICE.stats.constant_bytes_to_device += self.constant_bytes
        DEVICE.stats.bytes_to_device += self.constant_bytes

    def release(self) -> None:
        """Free this program's slot in program memory. Calling the program afterwards raises NPURuntimeError."""
        DEVICE._release(self._id)

    @property
    def resident(self) -> bool:
        return DEVICE._is_resident(self._id)

    def __repr__(self) -> str:
        ops = ", ".join(step.op for step in self.steps)
        return f"NPUProgram({self.name!r}: {ops}; {self.launches} launch(es))"

    def _check_args(self, args: tuple) -> None:
        if len(args) != len(self.input_specs):
            raise NPURuntimeError(f"{self.name}: called with {len(args)} inputs, compiled for {len(self.input_specs)}")
        for i, (arg, spec) in enumerate(zip(args, self.input_specs)):
            if type(spec) is int:
                if type(arg) is not int or arg != spec:
                    raise NPURuntimeError(
                        f"{self.name}: input {i} ({self.placeholders[i]}) is {_describe_value(arg)}, but the program "
                        f"was compiled for the value {spec}; NPU programs have static shapes")
                continue
            shape, dtype = spec
            if not isinstance(arg, torch.Tensor) or tuple(arg.shape) != shape or arg.dtype != dtype:
                raise NPURuntimeError(
                    f"{self.name}: input {i} ({self.placeholders[i]}) is {_describe_value(arg)}, but the program was "
                    f"compiled for {shape} {str(dtype).removeprefix('torch.')}; NPU programs have static shapes")

    def __call__(self, *args: torch.Tensor) -> Any:
        if not self.resident:
            error = NPURuntimeError(f"{self.name}: the program was released from the NPU's program memory; "
                                    f"compile it again")
            DEVICE.stats.runtime_errors.append(str(error))
            raise error
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
                env = {name: arg.detach() if isinstance(arg, torch.Tensor) else arg
                       for name, arg in zip(self.placeholders, args)}
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
        stats.input_bytes_to_device += self.bytes_in
        stats.bytes_from_device += self.bytes_out
        stats.estimated_us += self.estimated_us
        return outputs


class KeptPrograms:
    """Compiled programs kept by key for a runtime that compiles on first use (one program per input signature: the
    device is shape-static), least recently used first out. At most `size` are kept (None: as many as the device
    holds); the least recently used one is released to make room: before compiling when the device's program
    memory is full (so a full device is not asked to compile first), and again whenever NPU.compile says memory is
    full. "Used" is `get`: a program found or compiled under its key. A kept program the device released since is
    compiled again. When memory is full and nothing is kept, `get` raises the device's NPUCompileError."""

    def __init__(self, size: int | None = None) -> None:
        self.size = size
        self._programs: "OrderedDict[Any, NPUProgram]" = OrderedDict()

    def __contains__(self, key: Any) -> bool:
        return key in self._programs

    def __len__(self) -> int:
        return len(self._programs)

    def get(self, key: Any, compile_program: Callable[[], NPUProgram]) -> NPUProgram:
        """The program kept under `key`, or `compile_program()`'s, kept from now on; either way the newest."""
        kept = self._programs.pop(key, None)
        if kept is not None and kept.resident:
            self._programs[key] = kept  # now the newest
            return kept
        while self.size is not None and len(self._programs) >= self.size:
            self._release_oldest()
        # A compile on a full device first collects garbage (a dropped handle's slot may come back), which costs a
        # full garbage collection per program once memory stays full; releasing our oldest first skips that.
        while self._programs and DEVICE.free_program_slots() <= 0:
            self._release_oldest()
        while True:
            try:
                compiled = compile_program()
                break
            except NPUCompileError as error:
                if error.what != "program" or not self._programs:  # a graph the NPU refuses, or memory others hold
                    raise
                self._release_oldest()
        self._programs[key] = compiled
        return compiled

    def discard(self, key: Any) -> None:
        """Release the program kept under `key`, if any, and forget it (a program that went stale)."""
        program = self._programs.pop(key, None)
        if program is not None:
            program.release()

    def _release_oldest(self) -> None:
        self._programs.popitem(last=False)[1].release()

    def release_all(self) -> None:
        while self._programs:
            self._release_oldest()


# --- the device across a process boundary ---------------------------------------------------------------
# The checker runs an attempt in a worker process and the checks in another (checker/trusted/stand_ins.py). The device
# the checks read must be theirs, so in the worker `DEVICE` is a DeviceClient: it checks a graph as NPU.compile does
# (same errors, same messages), then sends the graph as plain data to the DeviceService in the checks' process, which
# rebuilds it from allowed ops only, compiles it on the real DEVICE and keeps the program. Runs and releases go the
# same way; the worker keeps only handles.

class DeviceClient(NPUDevice):
    """`DEVICE` in the worker. `transport(service, *args)` sends one request to the checks' process and returns
    its answer (checker.attempt.worker.request_service)."""

    def __init__(self, transport: Callable[..., Any]) -> None:  # noqa: D107 - no NPUDevice state is used here
        self._transport = transport
        self.busy = False
        self._pending_releases: list[int] = []

    def _request(self, service: str, *args: Any) -> Any:
        self.sync_releases()
        return self._transport(service, *args)

    def sync_releases(self) -> None:
        """Tell the device about the programs whose last handle was garbage-collected here."""
        if self._pending_releases:
            ids, self._pending_releases = self._pending_releases, []
            self._transport("npu.release", ids)

    def _queue_release(self, program_id: int) -> None:
        # a finalizer may run in the middle of another request on the channel: only note it, send it later
        self._pending_releases.append(program_id)

    @property
    def stats(self) -> NPUStats:  # type: ignore[override]
        return self._request("npu.stats")

    @property
    def max_resident_programs(self) -> int:  # type: ignore[override]
        return self.stats.max_resident_programs

    def reset(self) -> None:
        raise RuntimeError("DEVICE.reset() is for the checks (here the NPU belongs to the checker's process); "
                           "read DEVICE.stats before and after instead")

    def inject_fault(self, n: int = 1) -> None:
        raise RuntimeError("DEVICE.inject_fault() is for the checks (here the NPU belongs to the checker's process)")

    def release_all(self) -> None:
        self._request("npu.release_all")  # counted, not done: the device's memory holds other code's programs too
        raise RuntimeError("DEVICE.release_all() is for the checks: it would empty the whole NPU, programs of other "
                           "code included. Release only the programs your backend compiled (program.release(), or "
                           "KeptPrograms.release_all() for your own cache)")

    def free_program_slots(self) -> int:
        return int(self._request("npu.free_program_slots"))

    def compile(self, gm: torch.fx.GraphModule, example_inputs: list, name: str) -> "NPUProgram":
        self.busy = True
        try:
            try:
                local = NPUProgram._build(gm, example_inputs, name)  # the device's own checks, the same messages
            except NPUCompileError as error:
                self._request("npu.compile_error", error.node, error.reason, "node")
                raise
            answer = self._request("npu.compile", gm, local.input_specs, name, True)  # the graph as a description
            if answer.get("full"):
                gc.collect()  # programs whose last handle is unreachable garbage are freed by their finalizers
                answer = self._request("npu.compile", gm, local.input_specs, name, False)
        finally:
            self.busy = False
        if "error" in answer:
            node, reason, what = answer["error"]
            raise NPUCompileError(node, reason, what=what)
        return _ProgramHandle._wrap(local, answer["id"])


class _ProgramHandle(NPUProgram):
    """An NPUProgram compiled by the device in the checks' process; this process holds its handle."""

    @classmethod
    def _wrap(cls, local: NPUProgram, program_id: int) -> "_ProgramHandle":
        local.__class__ = cls
        local._id = program_id
        local.constants = {}  # they live on the device
        weakref.finalize(local, DEVICE._queue_release, program_id)
        return local

    def release(self) -> None:
        DEVICE._request("npu.release", [self._id])

    @property
    def resident(self) -> bool:
        return bool(DEVICE._request("npu.resident", self._id))

    def __call__(self, *args: torch.Tensor) -> Any:
        DEVICE.busy = True
        try:
            answer = DEVICE._request("npu.run", self._id, list(args))
        finally:
            DEVICE.busy = False
        if "error" in answer:
            raise NPURuntimeError(answer["error"])
        return answer["value"]


class DeviceService:
    """The checks' side of DeviceClient: compiles, runs and releases programs on the real `DEVICE` for one worker.

    The checker rebuilds every graph the worker sends from its description, resolving targets against torch's
    own ops only, so no function of the worker's runs here. `handlers()` is what a kata's checks register as
    the worker's services."""

    def __init__(self) -> None:
        self.programs: dict[int, NPUProgram] = {}
        self._ids = itertools.count(1)

    def handlers(self) -> dict[str, Callable[..., Any]]:
        return {"npu.hello": self.hello, "npu.compile": self.compile, "npu.compile_error": self.compile_error,
                "npu.run": self.run, "npu.release": self.release, "npu.release_all": self.refuse_release_all,
                "npu.free_program_slots": self.free_program_slots, "npu.resident": self.resident,
                "npu.stats": self.stats}

    def hello(self) -> None:
        """A new worker: the programs of the one before it lost their last handle when it ended."""
        self.release_all()

    def refuse_release_all(self) -> None:
        """The worker called DEVICE.release_all(): count it where the checks read it (the client raises)."""
        DEVICE.stats.release_all_calls += 1

    def free_program_slots(self) -> int:
        return DEVICE.free_program_slots()

    def stats(self) -> NPUStats:
        import copy

        return copy.deepcopy(DEVICE.stats)

    def compile_error(self, node: str, reason: str, what: str) -> None:
        DEVICE.stats.compile_errors.append(str(NPUCompileError(str(node), str(reason), what=str(what))))

    def compile(self, graph: Any, specs: list, name: str, retry_if_full: bool) -> dict:
        """`graph` is the worker's GraphModule, rebuilt by the checker from its description with torch's own ops
        only (no function of the worker's runs here), or the exception saying why it could not be rebuilt."""
        self.programs = {k: p for k, p in self.programs.items() if p.resident}
        if retry_if_full and len(DEVICE._resident) >= DEVICE.max_resident_programs:
            return {"full": True}  # the worker frees what it dropped first, then asks again
        name = str(name)
        if not isinstance(graph, torch.fx.GraphModule):
            why = str(graph) if isinstance(graph, Exception) else "what was sent is not a graph"
            error = NPUCompileError(name, f"{why}; the NPU compiles graphs lowered to ATen", what="program")
            DEVICE.stats.compile_errors.append(str(error))
            return {"error": [error.node, error.reason, error.what]}
        try:
            program = NPU.compile(graph, [_example(spec) for spec in specs], name)
        except NPUCompileError as error:  # NPU.compile counted it
            return {"error": [error.node, error.reason, error.what]}
        program_id = next(self._ids)
        self.programs[program_id] = program
        return {"id": program_id}

    def run(self, program_id: int, args: list) -> dict:
        program = self.programs.get(program_id)
        if program is None:
            return {"error": f"no program with handle {program_id!r} on the NPU"}
        try:
            return {"value": program(*args)}
        except NPURuntimeError as error:
            return {"error": str(error)}

    def release(self, ids: list) -> None:
        for program_id in ids:
            program = self.programs.pop(program_id, None)
            if program is not None:
                program.release()

    def release_all(self) -> None:
        self.release(list(self.programs))

    def resident(self, program_id: int) -> bool:
        program = self.programs.get(program_id)
        return program is not None and program.resident


def _example(spec: Any) -> Any:
    if type(spec) is int:
        return spec
    shape, dtype = spec
    return torch.empty(tuple(int(s) for s in shape), dtype=dtype, device="meta")


def connect_to_device_service(transport: Callable[..., Any]) -> None:
    """Make `DEVICE` a DeviceClient of the device in the checks' process (the checker's worker calls this before
    it imports the attempt)."""
    global DEVICE
    DEVICE = DeviceClient(transport)
    transport("npu.hello")


def sync_releases() -> None:
    """Hand the device the programs whose handles were garbage-collected (in a worker; elsewhere that is immediate)."""
    if isinstance(DEVICE, DeviceClient):
        DEVICE.sync_releases()
