"""Probes for kata 6's checks: everything that runs the attempt's code.

A probe takes the attempt module and plain data -- calls as (shape, n, dtype) triples, which fix to compile, input
tensors, a model recipe, bucket sizes -- and returns plain data: predictions as (kind, symbolic inputs) pairs,
per-call records of what Dynamo compiled and ran, outputs, warnings as (category, message) pairs, exceptions as
text. checks.py compares that data with what Dynamo really did (measured in the checks' own process) and with
the device's own counters. Nothing here asserts or knows what a right answer is.

An exception the attempt raises that no probe expects (NotImplementedError from the stub, a bug) propagates, so
the checker reports it at the attempt's own file and line.
"""
from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any, Callable

import torch
import torch._dynamo

from katas.common.models import build_mlp
from katas.common.quiet import quiet

# Dynamo's cache settings as torch 2.13 ships them: a fix must not lean on settings the attempt changed at import
# (a higher recompile limit, ints on modules made symbolic), which would change every compile in the process.
DEFAULT_CACHE_CONFIG = {"recompile_limit": 8, "automatic_dynamic_shapes": True, "assume_static_by_default": True,
                        "allow_unspec_int_on_nn_module": False, "specialize_int": False, "specialize_float": False}


# --- Part 1: predictions ------------------------------------------------------------------------------------

def _plain_outcome(outcome: Any) -> dict:
    """One item `predict` returned, as data: kind and symbolic when they have the promised types, else None."""
    kind = getattr(outcome, "kind", None)
    symbolic = getattr(outcome, "symbolic", None)
    try:
        names = sorted(str(s) for s in symbolic) if isinstance(symbolic, (set, frozenset, list, tuple)) else None
    except Exception:  # noqa: BLE001 - a symbolic set that cannot be listed is reported as missing
        names = None
    return {"kind": kind if isinstance(kind, str) else None, "symbolic": names, "repr": repr(outcome)[:200]}


def predictions(attempt: ModuleType, calls: list[tuple], dynamic: bool | None) -> dict:
    """attempt.predict on `calls` (shape, n, dtype) built as the attempt's own Call objects, with torch.compile
    forced to run eagerly: a prediction is worked out from the rules, not read off Dynamo (README.md, 'Predict')."""
    made = [attempt.Call(shape=tuple(shape), n=n, dtype=dtype) for shape, n, dtype in calls]
    torch._dynamo.reset()
    real_compile, compiled = torch.compile, []

    def noting_compile(*args: Any, **kwargs: Any) -> Any:  # only to say why, should a prediction be wrong
        compiled.append(True)
        return real_compile(*args, **kwargs)

    torch.compile = noting_compile
    try:
        with torch.compiler.set_stance("force_eager"):
            result = attempt.predict(made, dynamic)
    finally:
        torch.compile = real_compile
    items = [_plain_outcome(o) for o in result] if isinstance(result, (list, tuple)) else []
    return {"type": type(result).__name__, "items": items, "called_torch_compile": bool(compiled)}


# --- Part 2: fixes ------------------------------------------------------------------------------------------

def recording_backend(graphs: list, ran: list[int], describe: Callable[[torch.fx.GraphModule], Any]) -> Callable:
    """A backend that notes `describe(gm)` of each graph it is handed, and the graph's index every time one runs
    (a call that compiled nothing and ran no graph ran eagerly). The checks' own measurements use it too."""

    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
        index = len(graphs)
        graphs.append(describe(gm))

        def run(*args: Any) -> Any:
            ran.append(index)
            return gm(*args)

        return run

    return backend


def _ops(gm: torch.fx.GraphModule) -> dict:
    return {"ops": [str(getattr(n.target, "__name__", n.target)) for n in gm.graph.nodes
                    if n.op in ("call_function", "call_method", "call_module")]}


def build_fix(attempt: ModuleType, name: str, state: dict | None,
              arguments: dict | None = None) -> tuple[Callable, list[str]]:
    """The attempt's fix `name`: a function as it is, a module class built with `arguments` (its defaults when
    none), given the suspect's parameters `state` by name (strict=False) and put in eval mode. Also the parameter
    names it lacks."""
    fix = getattr(attempt, name)
    if not isinstance(fix, type):
        return fix, []
    fix = fix(**(arguments or {}))
    missing: list[str] = []
    if state is not None:
        names = {n for n, _ in fix.named_parameters()}
        missing = sorted(set(state) - names)
        fix.load_state_dict({k: v for k, v in state.items() if k in names}, strict=False)
    return fix.eval(), missing


def _shared_tensors(attempt: ModuleType, name: str) -> dict[str, Any]:
    """The tensors every instance of the fix `name` would share: attributes of its class (and of its bases written
    in the attempt) and the attempt's module-level tensors, by the name a message gives them, with a copy of each
    value to compare after the calls."""
    found: dict[str, Any] = {}
    fix = getattr(attempt, name, None)
    owners = [c for c in getattr(fix, "__mro__", ()) if getattr(c, "__module__", None) == attempt.__name__]
    for owner in owners:
        for attr, value in vars(owner).items():
            if isinstance(value, torch.Tensor):
                found[f"{owner.__name__}.{attr} (on the class)"] = (value, value.detach().clone())
    for attr, value in vars(attempt).items():
        if isinstance(value, torch.Tensor):
            found[f"{attr} (at module level)"] = (value, value.detach().clone())
    return found


def _changed_shared_state(attempt: ModuleType, name: str, before: dict[str, Any]) -> list[str]:
    """The names of `before`'s tensors that the calls changed, in place or by rebinding the name."""
    after = _shared_tensors(attempt, name)
    changed = []
    for label, (value, copy) in before.items():
        now = after.get(label)
        if now is None or now[0] is not value or now[1].shape != copy.shape or not torch.equal(now[1], copy):
            changed.append(label)
    return changed


def changed_settings() -> dict:
    """The Dynamo settings of DEFAULT_CACHE_CONFIG whose value in this process is not torch's default."""
    return {k: getattr(torch._dynamo.config, k) for k, v in DEFAULT_CACHE_CONFIG.items()
            if getattr(torch._dynamo.config, k) != v}


def run_fix(attempt: ModuleType, name: str, inputs: list[torch.Tensor], state: dict | None,
            arguments: dict | None = None) -> dict:
    """torch.compile(fix, fullgraph=True) with a recording backend, after torch._dynamo.reset(); call it on each
    input in order under no_grad. `state`, for a module fix, is the suspect's parameters, loaded with
    strict=False. Per call: the output, whether it compiled a graph and whether a compiled graph ran it. Also the
    tensors outside the instance (on the class, at module level) that the calls changed."""
    torch._dynamo.reset()
    fix, missing = build_fix(attempt, name, state, arguments)
    if not isinstance(getattr(attempt, name), type) and inputs:
        with torch.no_grad(), quiet():
            fix(inputs[0].clone())  # eagerly first: an unfinished fix says so, instead of failing Dynamo's trace
    graphs: list[dict] = []
    ran: list[int] = []
    compiled = torch.compile(fix, backend=recording_backend(graphs, ran, _ops), fullgraph=True)
    calls = []
    shared = _shared_tensors(attempt, name)
    with torch._dynamo.config.patch(DEFAULT_CACHE_CONFIG):
        for x in inputs:
            if not _call_fix(compiled, x, graphs, ran, calls):
                break
    return {"calls": calls, "graphs": graphs, "missing_parameters": missing, "changed_settings": changed_settings(),
            "shared_state": _changed_shared_state(attempt, name, shared),
            "aot": run_fix_through_aot_autograd(attempt, name, inputs, state, arguments)}


def run_fix_through_aot_autograd(attempt: ModuleType, name: str, inputs: list[torch.Tensor], state: dict | None,
                                 arguments: dict | None = None) -> dict:
    """The same calls on a fix built afresh, compiled with fullgraph=True and backend="aot_eager": the aot_autograd
    step torch.compile's default backend runs before Inductor generates code, where a float attribute is guarded
    on its value again and some in-place buffer updates behave otherwise than in Dynamo's graph. Per call: the
    output or the error; and how many graphs Dynamo made."""
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    fix, _ = build_fix(attempt, name, state, arguments)
    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(fix, backend=counter, fullgraph=True)
    calls = []
    with torch._dynamo.config.patch(DEFAULT_CACHE_CONFIG):
        for x in inputs:
            record: dict = {"output": None, "error": None}
            try:
                with torch.no_grad(), quiet():
                    record["output"] = compiled(x.clone())
            except Exception as exc:  # noqa: BLE001 - any failure of the compiled fix is the check's to report
                text = str(exc).strip()
                record["error"] = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
            calls.append(record)
            if record["error"]:
                break
    torch._dynamo.reset()
    return {"calls": calls, "graphs": counter.frame_count}


def run_fix_instances(attempt: ModuleType, name: str, states: list[dict], schedule: list[int],
                      inputs: list[torch.Tensor]) -> dict:
    """One instance of the module fix `name` per state in `states` (built and given that state as run_fix does),
    each compiled with torch.compile(fullgraph=True) and one recording backend they share, after
    torch._dynamo.reset(); call k goes to instance schedule[k] with inputs[k], under no_grad. Per call, as run_fix."""
    torch._dynamo.reset()
    built = [build_fix(attempt, name, state) for state in states]
    graphs: list[dict] = []
    ran: list[int] = []
    backend = recording_backend(graphs, ran, _ops)
    compiled = [torch.compile(fix, backend=backend, fullgraph=True) for fix, _ in built]
    calls: list[dict] = []
    shared = _shared_tensors(attempt, name)
    with torch._dynamo.config.patch(DEFAULT_CACHE_CONFIG):
        for who, x in zip(schedule, inputs):
            if not _call_fix(compiled[who], x, graphs, ran, calls):
                break
    return {"calls": calls, "graphs": graphs, "missing_parameters": built[0][1] if built else [],
            "changed_settings": changed_settings(), "shared_state": _changed_shared_state(attempt, name, shared)}


def _call_fix(compiled: Callable, x: torch.Tensor, graphs: list, ran: list, calls: list) -> bool:
    """One call of a compiled fix, noted in `calls`; False when it failed."""
    before_graphs, before_ran = len(graphs), len(ran)
    record: dict = {"output": None, "error": None}
    try:
        with torch.no_grad(), quiet():
            record["output"] = compiled(x.clone())
    except (torch._dynamo.exc.TorchDynamoException, torch._dynamo.exc.FailOnRecompileLimitHit) as exc:
        record["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    record["compiled"] = len(graphs) - before_graphs
    record["in_graph"] = len(ran) > before_ran
    calls.append(record)
    return record["error"] is None


# --- Part 3: buckets ----------------------------------------------------------------------------------------

_SERVERS: dict[str, Any] = {}


def serve(attempt: ModuleType, spec: Any, buckets: tuple[int, ...] | None, beside: bool = False) -> str:
    """A BucketedNPU of the random MLP `spec`, kept here between calls under a key the checks use; with `beside`,
    the servers built before it are kept too (two servers side by side)."""
    if not beside:
        _SERVERS.clear()
    model = build_mlp(spec).eval()
    server = attempt.BucketedNPU(model) if buckets is None else attempt.BucketedNPU(model, buckets)
    key = f"server{len(_SERVERS)}"
    _SERVERS[key] = server
    return key


def serve_call(attempt: ModuleType, key: str, x: torch.Tensor) -> dict:
    """Call the server on x; its output, the warnings it raised and its `fallbacks` counter after the call."""
    server = _SERVERS[key]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        output = server(x)
    fallbacks = getattr(server, "fallbacks", None)
    return {"output": output if isinstance(output, torch.Tensor) else None, "type": type(output).__name__,
            "warnings": [(w.category.__name__, str(w.message)) for w in caught],
            "fallbacks": fallbacks if isinstance(fallbacks, int) else None}
