"""Capture a model's FX graph the way each tool does, and run the captured graph with the right inputs.

The same model yields different graphs depending on how it was captured; that is what the katas teach.
`capture(model, inputs, method)` returns a `Captured` whose `gm` is the graph the tool produced (a pass may
rewrite it in place) and whose `run(*inputs)` executes that graph — including the current, possibly
rewritten, version of it — with the tool's calling convention: Dynamo, aot_autograd and export graphs take
the parameters as extra inputs, which `run` supplies.

| method               | graph dialect of an MLP | what the graph calls                                  |
|----------------------|-------------------------|-------------------------------------------------------|
| symbolic_trace       | module                  | call_module fc1/act; free functions stay call_function |
| dynamo               | torch                   | torch._C._nn.linear, torch._C._nn.gelu (params lifted) |
| make_fx_pre_dispatch | aten                    | aten.linear, aten.gelu                                |
| export               | aten                    | aten.linear, aten.gelu (params lifted)                |
| make_fx              | aten                    | aten.t + aten.addmm (3-D input: aten.view around)     |
| aot_autograd         | aten                    | aten.t + aten.addmm, primals_N placeholders           |
| export_core          | core_aten               | aten.permute + aten.addmm (export().run_decompositions()) |
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx

CAPTURES = ("symbolic_trace", "dynamo", "make_fx_pre_dispatch", "export", "make_fx", "aot_autograd", "export_core")
# Captures that can keep the batch size symbolic (`capture(..., dynamic=True)`): Dynamo and aot_autograd with
# `dynamic=True`, export with a `Dim` on dimension 0 of every input. Sizes then flow through the graph as SymInts.
DYNAMIC_CAPTURES = ("dynamo", "aot_autograd", "export", "export_core")
CAPTURE_DIALECT = {
    "symbolic_trace": "module",
    "dynamo": "torch",
    "make_fx_pre_dispatch": "aten",
    "export": "aten",
    "make_fx": "aten",
    "aot_autograd": "aten",
    "export_core": "core_aten",
}


def remember_cia_ops() -> None:
    """Make `ExportedProgram.run_decompositions()` learn torch's set of CompositeImplicitAutograd ops once per
    dispatcher state instead of on every call.

    Each run_decompositions() call walks every op namespace of the dispatcher twice to collect the functional
    CompositeImplicitAutograd ops (`torch._export.utils._collect_all_valid_cia_ops`): about 130 ms a walk on the
    reference machine, more than the decomposition itself. torch does not cache the set because registering an op
    can change it. Here it is kept per state of the C++ registrations for that key and of the op namespaces, so a
    registration makes the next call walk again. The graphs are the same (tests/test_common.py compares them).
    Idempotent; the checks and the warm server install it at import.
    """
    import torch._export.utils as export_utils
    import torch.export.decomp_utils as decomp_utils
    import torch.export.exported_program as exported_program

    walk = export_utils._collect_all_valid_cia_ops
    if getattr(walk, "remembers_cia_ops", False):
        return
    known: dict[tuple, frozenset] = {}

    def collect_all_valid_cia_ops() -> frozenset:
        state = (tuple(torch.ops._dir),
                 tuple(torch._C._dispatch_get_registrations_for_dispatch_key("CompositeImplicitAutograd")))
        if state not in known:
            known.clear()
            known[state] = frozenset(walk())
        return known[state]

    collect_all_valid_cia_ops.remembers_cia_ops = True
    collect_all_valid_cia_ops.torch_walk = walk  # torch's own, for the test that compares the two
    for module in (export_utils, decomp_utils, exported_program):
        module._collect_all_valid_cia_ops = collect_all_valid_cia_ops


remember_cia_ops()


def override_cia_decompositions_quickly() -> None:
    """Make `run_decompositions()` patch torch's CompositeImplicitAutograd ops quickly: ~85 ms less per call.

    Each run_decompositions() call enters `torch.export.exported_program._override_composite_implicit_decomp`
    twice. It gives every functional composite op (about 1,100) kernels for 21 dispatch keys through
    `OperatorBase.py_impl`, which evaluates its inner function's annotations (`Callable[_P, _T]`, twice) and
    hashes and compares pybind enums on every call: 11,000 calls per entry, over half of a decomposed export's
    150 ms on the reference machine. This is the same function writing the same kernels into the same tables
    directly, in the same order. It skips only the checks that the `not in` test before each write makes
    redundant, clears each op's dispatch cache once instead of once per key, and gives an op's 12 autograd keys
    one `autograd_not_implemented` kernel instead of 12 equal ones. On exit it restores exactly what torch's
    does. The graphs are the same (tests/test_common.py compares them). Idempotent; installed at import.
    """
    import functools
    from contextlib import contextmanager

    import torch.export.exported_program as exported_program
    from torch._export.utils import _get_decomp_for_cia
    from torch._higher_order_ops.utils import autograd_not_implemented
    from torch._subclasses.fake_impls import _deregister_op_impl, op_implementations_dict

    torchs = exported_program._override_composite_implicit_decomp
    if getattr(torchs, "overrides_quickly", False):
        return
    composite = torch._C.DispatchKey.CompositeImplicitAutograd
    # dicts, because `dict.fromkeys(a_dict, value)` reuses the stored hashes: hashing a pybind enum costs ~1 µs
    autograd_keys = dict.fromkeys(exported_program._AUTOGRAD_ALIAS_BACKEND_KEYS_TO_OVERRIDE)
    backend_keys = dict.fromkeys(exported_program._BACKEND_KEYS_TO_OVERRIDE)

    # torch's own function behind _get_decomp_for_cia's partial for an op with no Python composite kernel
    probe = _get_decomp_for_cia(torch.ops.aten.linear.default)
    if not isinstance(probe, functools.partial):  # someone gave aten.linear a Python composite kernel: torch's way
        return
    decompose_with_the_cpp_kernel = probe.func

    def force_dispatch_to_orig_cia_callable(fake_tensor_mode, op, *args, **kwargs):
        # torch's own nested function of the same name: fake tensors run the op's original composite kernel
        orig_cia_callable = kwargs.pop("original_callable")
        with fake_tensor_mode:
            return orig_cia_callable(*args, **kwargs)

    @contextmanager
    def override_composite_implicit_decomp(cia_ops_to_callable):
        saved_tables = {}
        for op, decomp_callable in cia_ops_to_callable.items():
            kernels = op.py_kernels
            saved_tables[op] = kernels.copy()
            if kernels:  # the rare op with Python kernels already: only the keys it lacks
                for key in autograd_keys:
                    if key not in kernels:
                        kernels[key] = autograd_not_implemented(op, deferred_error=True)
                orig_cia_callable = _get_decomp_for_cia(op)  # before the composite kernel is replaced
            else:  # what _get_decomp_for_cia(op) gives an op without a Python composite kernel, made faster
                kernels.update(dict.fromkeys(autograd_keys, autograd_not_implemented(op, deferred_error=True)))
                orig_cia_callable = functools.partial(decompose_with_the_cpp_kernel, kernel=op)
            kernels.pop(composite, None)
            kernels[composite] = decomp_callable
            if op not in op_implementations_dict:
                op_implementations_dict[op] = functools.partial(force_dispatch_to_orig_cia_callable,
                                                                original_callable=orig_cia_callable)
            for key in backend_keys:
                if key not in kernels:
                    kernels[key] = orig_cia_callable
            op._dispatch_cache.clear()
        try:
            yield
        finally:
            for op, table in saved_tables.items():
                op.py_kernels.clear()
                op.py_kernels.update(table)
                op._dispatch_cache.clear()
                _deregister_op_impl(op)

    override_composite_implicit_decomp.overrides_quickly = True
    override_composite_implicit_decomp.torchs = torchs  # torch's own, for the test that compares the two
    exported_program._override_composite_implicit_decomp = override_composite_implicit_decomp


override_cia_decompositions_quickly()


class CaptureError(RuntimeError):
    """The tool could not capture the model as one graph, or running it would need a new capture."""


@dataclass
class Captured:
    method: str
    gm: torch.fx.GraphModule
    _run: Callable[..., Any]

    def run(self, *inputs: torch.Tensor) -> Any:
        """Run the graph as it is now on `inputs` (same shapes and dtypes as the capture's)."""
        return self._run(*inputs)


class _GraphRecorder:
    """A torch.compile backend that keeps the graph it receives and runs the latest version of it."""

    def __init__(self) -> None:
        self.graphs: list[torch.fx.GraphModule] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        self.graphs.append(gm)
        return lambda *args: gm(*args)


def _compile_and_capture(model: Callable, inputs: tuple, backend_for: Callable[[_GraphRecorder], Any], method: str,
                         dynamic: bool = False) -> Captured:
    import torch._dynamo

    torch._dynamo.reset()  # otherwise same-code models share a cache and hit the recompile limit
    recorder = _GraphRecorder()
    compiled = torch.compile(model, backend=backend_for(recorder), fullgraph=True, dynamic=dynamic)
    with torch.no_grad():
        compiled(*inputs)
    if len(recorder.graphs) != 1:
        raise CaptureError(f"{method}: expected one graph, got {len(recorder.graphs)}")

    def run(*args: torch.Tensor) -> Any:
        with torch.no_grad():
            out = compiled(*args)
        if len(recorder.graphs) != 1:
            raise CaptureError(f"{method}: running with these inputs made Dynamo capture a new graph; "
                               "use inputs with the capture's shapes and dtypes")
        return out

    return Captured(method, recorder.graphs[0], run)


def _export_runner(ep: "torch.export.ExportedProgram", gm: torch.fx.GraphModule) -> Callable:
    from torch.export.graph_signature import InputKind
    from torch.utils import _pytree as pytree

    state = {**ep.state_dict, **ep.constants}
    specs = ep.graph_signature.input_specs

    def run(*user_inputs: torch.Tensor) -> Any:
        user = iter(user_inputs)
        args = [next(user) if spec.kind == InputKind.USER_INPUT else state[spec.target] for spec in specs]
        with torch.no_grad():
            flat = gm(*args)
        n_user = len(ep.graph_signature.user_outputs)
        return pytree.tree_unflatten(list(flat)[-n_user:], ep.call_spec.out_spec)

    return run


def capture(model: Callable, inputs: tuple, method: str, *, dynamic: bool = False) -> Captured:
    """Capture `model` called on `inputs` with `method` (one of CAPTURES). The model is not modified.

    `dynamic=True` keeps the batch size symbolic where the method can (DYNAMIC_CAPTURES; an error elsewhere):
    Dynamo and aot_autograd compile with `dynamic=True`, export marks dimension 0 of every input with a `Dim`.
    """
    inputs = tuple(inputs)
    if dynamic and method not in DYNAMIC_CAPTURES:
        raise ValueError(f"{method} cannot keep sizes symbolic; dynamic=True works with {', '.join(DYNAMIC_CAPTURES)}")
    if method == "symbolic_trace":
        gm = torch.fx.symbolic_trace(model)
        return Captured(method, gm, lambda *args: gm(*args))
    if method == "dynamo":
        return _compile_and_capture(model, inputs, lambda recorder: recorder, method, dynamic)
    if method == "aot_autograd":
        from torch._dynamo.backends.common import aot_autograd

        return _compile_and_capture(model, inputs, lambda recorder: aot_autograd(fw_compiler=recorder), method, dynamic)
    if method in ("make_fx", "make_fx_pre_dispatch"):
        with torch.no_grad():
            gm = make_fx(model, pre_dispatch=method == "make_fx_pre_dispatch")(*inputs)
        return Captured(method, gm, lambda *args: gm(*args))
    if method in ("export", "export_core"):
        if not isinstance(model, torch.nn.Module):
            raise CaptureError(f"{method} needs an nn.Module, got {type(model).__name__}")
        batch = torch.export.Dim("batch")
        dynamic_shapes = tuple({0: batch} for _ in inputs) if dynamic else None
        ep = torch.export.export(model, inputs, dynamic_shapes=dynamic_shapes)
        if method == "export_core":
            ep = ep.run_decompositions()
        return Captured(method, ep.graph_module, _export_runner(ep, ep.graph_module))
    raise ValueError(f"unknown capture method {method!r}; choose from {', '.join(CAPTURES)}")
