"""Probes for kata 5's checks: everything that runs a backend's code inside torch machinery.

A probe takes the backend module (the attempt, or the reference) and plain data -- a model recipe, input
tensors, a parameter name -- and returns plain data: outputs and gradients as tensors, warnings as
(category name, message) pairs, host ops as a dict, an NPURuntimeError that reached the caller as a string.
checks.py calls the probes, reads the NPU's counters itself, and judges. Nothing here asserts or knows what
a right answer is.

A compiled model lives in this module between probe calls, named by the session id `compile_model` returns,
so that the checks can read the device's counters between two calls of the same compiled model. One session
is alive at a time: `compile_model` resets Dynamo, as every check wants a fresh start anyway.

An exception the backend raises that no check expects (NotImplementedError from a stub, a bug) propagates,
unwrapped from Dynamo's BackendCompilerFailed, so the checker reports it at the attempt's own file and line.
"""
from __future__ import annotations

import functools
import gc
import itertools
import sys
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import torch
import torch._dynamo
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from katas.common.models import MLPSpec, build_mlp
from katas.common import npu
from katas.common.npu import NPURuntimeError, sync_releases
from katas.common.zoo import ZOO

BACKEND_NAME = "kata_npu"


# --- models the checks name by recipe ------------------------------------------------------------------

class LoneRelu(nn.Module):
    """sin -> relu -> cumsum: one supported op between two ops the NPU cannot run."""

    def forward(self, x):
        return torch.cumsum(torch.relu(torch.sin(x)), dim=-1)


class Sandwich(nn.Module):
    """Linear -> GELU -> sin -> Linear -> ReLU -> softmax -> Linear: three NPU islands between CPU ops."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(6, 8), nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x):
        h = torch.sin(F.gelu(self.fc1(x)))
        h = torch.softmax(torch.relu(self.fc2(h)), dim=-1)
        return self.fc3(h)


class GraphBreakMLP(nn.Module):
    """Linear -> GELU, then torch._dynamo.graph_break(), then Linear -> ReLU: Dynamo hands the backend two graphs."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 3)

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        torch._dynamo.graph_break()
        return torch.relu(self.fc2(h))


class ReturnsPreActivation(nn.Module):
    """Linear -> GELU where the Linear's output is also returned: not safe to fuse."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 6)

    def forward(self, x):
        z = self.fc(x)
        return F.gelu(z), z


class PositionIds(nn.Module):
    """x + position embeddings, then Linear -> GELU: `arange(seq) + 1` is an int64 add, as BERT's and GPT-2's are."""

    def __init__(self) -> None:
        super().__init__()
        self.pos, self.fc = nn.Embedding(16, 4), nn.Linear(4, 6)

    def forward(self, x):
        ids = torch.arange(x.shape[1]) + 1
        return F.gelu(self.fc(x * 2.0 + self.pos(ids)))


class MaskedByBool(nn.Module):
    """relu(fc(x)) times a bool mask plus relu(fc(x)) times an int32 one, + 1.0: each mul reads a bool or integer
    tensor and makes a float, as attention masks do."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 6)

    def forward(self, x):
        h = torch.relu(self.fc(x))
        return h * (x[..., :1] > 0) + h * (x[..., 1:2] < 0).to(torch.int32) + 1.0


class ReshapeBySecondInput(nn.Module):
    """relu(x).reshape(len(y), -1) * 2: once Dynamo makes len(y) symbolic, the partition takes x, whose shape never
    changes, and sizes the host computed from y (plain ints), which do."""

    def forward(self, x, y):
        return torch.relu(x).reshape(y.shape[0], -1) * 2


LOCAL_MODELS: dict[str, type[nn.Module]] = {
    "position_ids": PositionIds,
    "masked_by_bool": MaskedByBool,
    "reshape_by_second_input": ReshapeBySecondInput,
    "lone_relu": LoneRelu,
    "sandwich": Sandwich,
    "graph_break_mlp": GraphBreakMLP,
    "returns_pre_activation": ReturnsPreActivation,
}


def recipe(*, zoo: str = "", local: str = "", spec: MLPSpec | None = None, dtype: str = "float32",
           requires_grad: bool = True, real: str = "") -> dict:
    """How to build a model, as plain data: a zoo model, a model class of this file, or a random MLP; with
    `requires_grad=False`, after `model.requires_grad_(False)` (its parameters are still nn.Parameters)."""
    return {"zoo": zoo, "local": local, "spec": spec, "dtype": dtype, "requires_grad": requires_grad, "real": real}


def build(recipe: dict) -> nn.Module:
    """The model `recipe` names, with fixed weights, in eval mode (the same model every time it is built)."""
    if recipe.get("real"):
        from katas.common.real_models import REAL_MODELS

        return REAL_MODELS[recipe["real"]].build()
    if recipe["spec"] is not None:
        model = build_mlp(recipe["spec"])
    elif recipe["zoo"]:
        model = ZOO[recipe["zoo"]].build()
    else:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = LOCAL_MODELS[recipe["local"]]()
    model = model.to(getattr(torch, recipe["dtype"])).eval()
    return model.requires_grad_(recipe.get("requires_grad", True))


# --- sessions: a compiled model between probe calls -----------------------------------------------------------

@dataclass
class _Graph:
    """One graph Dynamo handed the backend: the callable the backend returned and the last real arguments it got."""

    compiled: Callable
    last_args: tuple = ()


@dataclass
class _Session:
    model: nn.Module
    compiled: Callable
    graphs: list[_Graph] = field(default_factory=list)
    optimizer: torch.optim.Optimizer | None = None
    stash: list[torch.Tensor] = field(default_factory=list)


_SESSIONS: dict[str, _Session] = {}
_SESSION_IDS = itertools.count()


def _recording(backend: Callable, graphs: list[_Graph]) -> Callable:
    """`backend`, noting each graph it is handed and the arguments each returned callable is called with."""

    def record(gm, example_inputs):
        compiled = backend(gm, example_inputs)
        graph = _Graph(compiled)
        graphs.append(graph)

        def run(*args):
            graph.last_args = args
            return compiled(*args)

        return run

    return record


def _unwrap(exc: BaseException) -> BaseException:
    """The backend's own exception when Dynamo wrapped it (so the learner sees their file and line)."""
    inner = getattr(exc, "inner_exception", None)
    return inner if isinstance(exc, torch._dynamo.exc.BackendCompilerFailed) and inner is not None else exc


def _unwrapped(fn: Callable, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - re-raised, unwrapped
        inner = _unwrap(exc)
        if inner is exc:
            raise
        raise inner.with_traceback(inner.__traceback__) from None


def compile_model(backend_module: ModuleType, recipe: dict, *, by_name: bool = False) -> str:
    """torch.compile the model `recipe` names with the module's `npu_backend` (or, `by_name`, with whatever
    "kata_npu" names in Dynamo's registry), after torch._dynamo.reset(). Nothing runs yet. Returns the session."""
    torch._dynamo.reset()
    _SESSIONS.clear()  # the previous compiled model and its NPU programs go away
    backend = torch._dynamo.lookup_backend(BACKEND_NAME) if by_name else backend_module.npu_backend
    model = build(recipe)
    graphs: list[_Graph] = []
    session = _Session(model, torch.compile(model, backend=_recording(backend, graphs)), graphs)
    key = f"session-{next(_SESSION_IDS)}"
    _SESSIONS[key] = session
    return key


@dataclass
class Called:
    """One call of a compiled model: its output, the warnings it raised, and an NPURuntimeError that escaped."""

    output: Any = None
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (category name, message)
    error: str | None = None  # an NPURuntimeError the call let through
    graphs: int = 0  # graphs Dynamo has handed the backend so far


def _call(session: _Session, inputs: tuple, grad: bool) -> tuple[Any, list, str | None]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with torch.set_grad_enabled(grad):
                output = _unwrapped(session.compiled, *inputs)
        except NPURuntimeError as error:
            return None, caught, str(error)
    return output, caught, None


def _plain_warnings(caught: list) -> list[tuple[str, str]]:
    return [(w.category.__name__, str(w.message)) for w in caught]


def call(backend_module: ModuleType, session: str, inputs: tuple, grad: bool = False) -> Called:
    """Call the session's compiled model with `inputs` under torch.no_grad() (with `grad`, with autograd on)."""
    state = _SESSIONS[session]
    output, caught, error = _call(state, tuple(inputs), grad=grad)
    return Called(output, _plain_warnings(caught), error, len(state.graphs))


@dataclass
class Gradients:
    """A forward under autograd and `output.sum().backward()`."""

    output: Any = None
    output_requires_grad: bool = False
    input_grad: torch.Tensor | None = None
    param_grads: dict[str, torch.Tensor | None] = field(default_factory=dict)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    error: str | None = None


def gradients(backend_module: ModuleType, session: str, inputs: tuple) -> Gradients:
    """Run the session's model on `inputs` (each made to require grad) with autograd on, then backward."""
    state = _SESSIONS[session]
    leaves = tuple(t.detach().clone().requires_grad_() for t in inputs)
    output, caught, error = _call(state, leaves, grad=True)
    result = Gradients(warnings=_plain_warnings(caught), error=error)
    if error is not None:
        return result
    result.output = output.detach() if isinstance(output, torch.Tensor) else output
    result.output_requires_grad = isinstance(output, torch.Tensor) and output.requires_grad
    if not result.output_requires_grad:
        return result
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            _unwrapped(lambda: output.sum().backward())
        except NPURuntimeError as error:
            result.error = str(error)
            return result
    result.warnings += _plain_warnings(caught)
    result.input_grad = leaves[0].grad
    result.param_grads = {name: p.grad for name, p in state.model.named_parameters()}
    return result


@dataclass
class Step:
    """One training step: the loss before the step and the warnings raised."""

    loss: torch.Tensor | None = None
    warnings: list[tuple[str, str]] = field(default_factory=list)
    error: str | None = None


def train_step(backend_module: ModuleType, session: str, inputs: tuple, lr: float) -> Step:
    """One SGD step on the session's model: loss = model(*inputs).square().mean(), backward, optimizer.step()."""
    state = _SESSIONS[session]
    if state.optimizer is None:
        state.optimizer = torch.optim.SGD(state.model.parameters(), lr=lr)
    state.optimizer.zero_grad()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with torch.enable_grad():
                loss = _unwrapped(state.compiled, *inputs).square().mean()
                _unwrapped(loss.backward)
        except NPURuntimeError as error:
            return Step(None, _plain_warnings(caught), str(error))
    state.optimizer.step()
    return Step(loss.detach(), _plain_warnings(caught))


def parameters(backend_module: ModuleType, session: str) -> dict[str, torch.Tensor]:
    """The session model's parameters, by name."""
    return {name: p.detach().clone() for name, p in _SESSIONS[session].model.named_parameters()}


def scale_parameter(backend_module: ModuleType, session: str, name: str, factor: float) -> None:
    """Change one parameter of the session's model in place (under no_grad, as optimizers and load_state_dict do)."""
    with torch.no_grad():
        _SESSIONS[session].model.get_parameter(name).mul_(factor)


def stash_tensors(backend_module: ModuleType, session: str, tensors: list[torch.Tensor]) -> None:
    """Keep `tensors` alive in the session (each at its own address), for `use_stashed_data`."""
    _SESSIONS[session].stash = list(tensors)


def use_stashed_data(backend_module: ModuleType, session: str, name: str, index: int) -> None:
    """`model.<name>.data = stashed tensor <index>`: the parameter keeps its identity and its version, only the
    memory it reads changes (as `Module._apply`, `model.half()` and weight-loading code do)."""
    _SESSIONS[session].model.get_parameter(name).data = _SESSIONS[session].stash[index]


def occupy_slot(name: str) -> Any:
    """A program of someone else's in program memory: the checks compile it on their own device and hold it."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from katas.common.npu import NPU

    example = torch.zeros(2)
    return NPU.compile(make_fx(torch.relu)(example), [example], name=name)


def collect_garbage(backend_module: ModuleType) -> None:
    """gc.collect() where the backend runs: programs the backend dropped inside reference cycles (a GraphModule
    holding them) are released now, as the NPU itself would before refusing a program for lack of room."""
    gc.collect()
    sync_releases()


class _HostOps(TorchDispatchMode):
    """Counts every ATen op the host runs outside NPU programs."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not npu.DEVICE.busy:
            self.ops[str(func)] += 1
        return func(*args, **(kwargs or {}))


def host_ops(backend_module: ModuleType, session: str) -> dict[str, int]:
    """Every ATen op the host runs ("aten.addmm.default" -> count) when each graph's compiled callable is called
    again with the arguments it last got.

    The dispatch mode wraps a direct call of the callable the backend returned, not a call of the compiled model:
    with a dispatch mode active, Dynamo stops using its compiled code for that frame, even for later calls.
    """
    recorder = _HostOps()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for graph in _SESSIONS[session].graphs:
            if graph.last_args:
                with recorder:
                    _unwrapped(graph.compiled, *graph.last_args)
    return dict(recorder.ops)


@dataclass
class Reimport:
    """Importing the backend's file twice more, as the checker, importlib.reload and notebooks do."""

    error: str | None = None  # the AssertionError register_backend raised, if it did
    registered: bool = False  # "kata_npu" is in Dynamo's registry afterwards


def reimport(backend_module: ModuleType, times: int = 2) -> Reimport:
    """Forget "kata_npu" as if this process had never seen it, then import the backend's file `times` times."""
    from torch._dynamo.backends import registry

    from checker.kit import load_module

    path = Path(backend_module.__file__)
    registry._COMPILER_FNS.pop(BACKEND_NAME, None)  # noqa: SLF001 - no public way to forget a name
    registry._BACKENDS.pop(BACKEND_NAME, None)  # noqa: SLF001
    names = [f"kata5_reimport_{i}" for i in range(times)]
    try:
        for name in names:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                load_module(path, name)
    except AssertionError as error:
        return Reimport(f"{type(error).__name__}: {error}", BACKEND_NAME in torch._dynamo.list_backends(exclude_tags=()))
    finally:
        for name in names:
            sys.modules.pop(name, None)
    return Reimport(None, BACKEND_NAME in torch._dynamo.list_backends(exclude_tags=()))


def registered_backend(backend_module: ModuleType) -> str:
    """What the name "kata_npu" compiles with, as it stands in this process: "npu_backend" when the registered
    object is the attempt module's `npu_backend` itself (a function, or an object such as aot_autograd's), an
    `npu_backend` defined in the attempt's file, or one that calls such a function (a lambda or a wrapper: each
    npu_backend its module globals name is swapped for a counting stand-in while a small model is compiled by name),
    "missing" when nothing is registered, else the registered object's repr."""
    from torch._dynamo.backends import registry

    fn = registry._COMPILER_FNS.get(BACKEND_NAME)  # noqa: SLF001 - the function itself, not lookup_backend's wrap
    if fn is None:
        return "missing"
    attempt_file = Path(backend_module.__file__).resolve()

    def ours(candidate: Any) -> bool:
        code = getattr(candidate, "__code__", None)
        return code is not None and Path(code.co_filename).resolve() == attempt_file

    if fn is getattr(backend_module, "npu_backend", None) or (ours(fn) and fn.__name__ == "npu_backend"):
        return "npu_backend"
    namespaces = [vars(backend_module)] + ([fn.__globals__] if ours(fn) else [])
    calls: list[int] = []
    saved = []
    for namespace in namespaces:
        real = namespace.get("npu_backend")
        if callable(real) and not any(namespace is ns for ns, _ in saved):
            saved.append((namespace, real))
            namespace["npu_backend"] = functools.wraps(real)(
                lambda *args, _real=real, **kwargs: (calls.append(1), _real(*args, **kwargs))[1])
    try:
        torch._dynamo.reset()
        model = nn.Sequential(nn.Linear(4, 4), nn.GELU()).eval()
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.compile(model, backend=BACKEND_NAME)(torch.randn(2, 4))
    except Exception:  # noqa: BLE001 - a backend that fails is the other checks' business; here only the route counts
        pass
    finally:
        for namespace, real in saved:
            namespace["npu_backend"] = real
        torch._dynamo.reset()
    return "npu_backend" if calls else repr(fn)[:200]


def dynamo_config_changes(backend_module: ModuleType | None = None) -> dict[str, str]:
    """Every key of torch._dynamo.config that is not at its default here, with its value's repr: called where the
    backend module was imported (and has compiled), it shows what the module changed for everyone in the process."""
    config = torch._dynamo.config
    return {key: repr(getattr(config, key)) for key in sorted(config._config)  # noqa: SLF001 - the key list
            if not config._is_default(key)}  # noqa: SLF001
