"""The channel between the trusted checks process and the worker that runs an attempt.

Two directions, two encodings, because only one side is trusted:

* trusted -> worker: `pickle` (torch's GraphPickler, so GraphModules keep their fake-tensor `meta["val"]`).
  The worker runs the attempt's code anyway; nothing it unpickles can do more than the attempt already can.
* worker -> trusted: *data only*. The worker turns its answer into plain values (None, bool, int, float, str,
  lists, dicts, tensors, dtypes, sizes) plus a few tagged records, sent as JSON with the tensors (and other
  non-JSON leaves) in one `torch.save`d list; the trusted side reads the tensors with
  `torch.load(weights_only=True)`, torch's restricted unpickler, which builds no object but tensors and plain
  values. Nothing the attempt sends can run code on the trusted side or reach its objects.

Frames are `kind` (one byte) + length (8 bytes, big-endian) + payload. A frame from the worker larger than
MAX_WORKER_FRAME is refused: an attempt cannot make the trusted side buffer without bound.
"""
from __future__ import annotations

import dataclasses
import enum
import io
import json
import os
import socket
import struct
import types
from collections import Counter
from typing import Any

from checker.core.modules import LOADED_FROM_FILES, load_module

MAX_WORKER_FRAME = 256 * 1024 * 1024
_HEADER = struct.Struct(">cQ")

# Frame kinds. Requests carry a call; replies answer the innermost open request of the other side.
REQUEST = b"Q"
REPLY = b"R"
HELLO = b"H"  # the worker's first frame: the attempt imported (or why not)


class ChannelClosed(EOFError):
    """The other side went away (the worker exited or was killed)."""


class FrameTooLarge(ValueError):
    """The worker sent more than MAX_WORKER_FRAME bytes in one frame."""


def send_frame(sock: socket.socket, kind: bytes, payload: bytes) -> None:
    sock.sendall(_HEADER.pack(kind, len(payload)) + payload)


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, remaining = [], size
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise ChannelClosed("the channel closed mid-frame" if chunks or size != _HEADER.size else "the channel closed")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def recv_frame(sock: socket.socket, limit: int | None = None) -> tuple[bytes, bytes]:
    """The next frame as (kind, payload). `limit` caps the payload size (FrameTooLarge past it)."""
    kind, size = _HEADER.unpack(_recv_exactly(sock, _HEADER.size))
    if limit is not None and size > limit:
        raise FrameTooLarge(f"a message of {size} bytes from the process running your code (the limit is {limit})")
    return kind, _recv_exactly(sock, size) if size else b""


def socket_pair() -> tuple[socket.socket, socket.socket]:
    """(trusted end, worker end); the worker end is inheritable, to be passed to the worker process."""
    trusted, worker = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    worker.set_inheritable(True)
    return trusted, worker


# --- worker -> trusted: plain data ------------------------------------------------------------------------

TAG = "__fx_katas__"  # key of a tagged record: {TAG: kind, ...}


def to_plain(value: Any, *, handle_of=None, describe_graph=None, _depth: int = 0) -> Any:
    """`value` as plain data the trusted side can read with torch.load(weights_only=True).

    Containers become tagged lists ({TAG: "list" | "tuple" | "set" | "dict" | "counter", "items": ...}) so that
    their type survives; enums become {TAG: "enum", "cls", "name", "value"}; dataclasses {TAG: "record", "cls",
    "fields"}; exceptions {TAG: "exception", ...}; fake and meta tensors their shape and dtype; GraphModules are
    described by `describe_graph`; any other object (an instance of the attempt's class, a function it returns)
    becomes a handle from `handle_of(obj)` that the trusted side can only call back through the channel.
    """
    import torch

    def recurse(item: Any) -> Any:
        return to_plain(item, handle_of=handle_of, describe_graph=describe_graph, _depth=_depth + 1)

    if _depth > 64:
        raise ValueError("the value is nested more than 64 levels deep")
    if value is None or type(value) in (bool, int, float, str, bytes):
        return value
    if isinstance(value, enum.Enum):
        return {TAG: "enum", "cls": type(value).__name__, "name": str(value.name), "value": recurse(_builtin(value.value))}
    if isinstance(value, (bool, int, float, str, bytes)):  # a subclass of a builtin scalar
        return _builtin(value)
    if isinstance(value, torch.Tensor):
        return _plain_tensor(value)
    if isinstance(value, (torch.dtype, torch.device, torch.Size)):
        return value
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return {TAG: "symbol", "text": str(value)}
    if isinstance(value, Counter):
        return {TAG: "counter", "items": [[recurse(k), recurse(v)] for k, v in value.items()]}
    if isinstance(value, dict):
        return {TAG: "dict", "items": [[recurse(k), recurse(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple, set, frozenset)):
        kind = "tuple" if isinstance(value, tuple) else "set" if isinstance(value, (set, frozenset)) else "list"
        return {TAG: kind, "items": [recurse(v) for v in value]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: recurse(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {TAG: "record", "cls": type(value).__name__, "fields": fields}
    if isinstance(value, BaseException):
        return {TAG: "exception", "cls": type(value).__name__, "message": str(value)[:2000]}
    if describe_graph is not None and isinstance(value, torch.fx.GraphModule):
        return {TAG: "graph", "description": describe_graph(value)}
    if handle_of is not None:
        return {TAG: "handle", **handle_of(value)}
    raise TypeError(f"cannot send a {type(value).__name__} to the checks")


def _builtin(value: Any) -> Any:
    """A subclass of a builtin scalar (an IntEnum member, a str subclass) as the plain builtin."""
    for kind in (bool, int, float, str, bytes):
        if isinstance(value, kind):
            return kind(value)
    return value


def _plain_tensor(t: Any) -> Any:
    """A real CPU tensor as a detached copy; a fake, meta or other device tensor as its shape and dtype."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    if isinstance(t, FakeTensor) or t.device.type != "cpu" or t.is_sparse:
        shape = [int(s) if isinstance(s, int) else str(s) for s in t.shape]
        return {TAG: "tensor_spec", "shape": shape, "dtype": t.dtype}
    plain = t.detach()
    if type(plain) is not torch.Tensor:
        plain = plain.as_subclass(torch.Tensor)
    return {TAG: "tensor", "value": plain.clone().contiguous(), "requires_grad": bool(t.requires_grad)}


def dump_plain(value: Any) -> bytes:
    """Serialise data already made plain by `to_plain` (worker side): JSON for the structure, and, when there
    are tensors, dtypes or bytes, those leaves in one `torch.save`d list that the JSON refers to by index."""
    leaves: list[Any] = []
    text = json.dumps(_leaves_out(value, leaves), allow_nan=True, separators=(",", ":")).encode()
    if not leaves:
        return b"J" + text
    buffer = io.BytesIO()
    import torch

    torch.save(leaves, buffer)
    return b"T" + struct.pack(">Q", len(text)) + text + buffer.getvalue()


def load_plain(payload: bytes) -> Any:
    """Read what the worker sent (trusted side): JSON, plus tensors read by torch's weights-only unpickler,
    which builds nothing but tensors and plain values. Nothing here can run code the worker chose."""
    if payload[:1] == b"J":
        return json.loads(payload[1:])
    if payload[:1] != b"T" or len(payload) < 9:
        raise ValueError("not a message from the worker")
    (size,) = struct.unpack(">Q", payload[1:9])
    structure = json.loads(payload[9:9 + size])
    import torch

    leaves = torch.load(io.BytesIO(payload[9 + size:]), weights_only=True, map_location="cpu")
    if not isinstance(leaves, list):
        raise ValueError("malformed leaves")
    return _leaves_in(structure, leaves)


_LEAF = "__fx_katas_leaf__"


def _leaves_out(value: Any, leaves: list) -> Any:
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, dict):
        return {str(k): _leaves_out(v, leaves) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_leaves_out(v, leaves) for v in value]
    leaves.append(value)
    return {_LEAF: len(leaves) - 1}


def _leaves_in(value: Any, leaves: list) -> Any:
    if isinstance(value, dict):
        if _LEAF in value and len(value) == 1:
            return leaves[int(value[_LEAF])]
        return {k: _leaves_in(v, leaves) for k, v in value.items()}
    if isinstance(value, list):
        return [_leaves_in(v, leaves) for v in value]
    return value


# --- trusted -> worker: pickle ---------------------------------------------------------------------------

def dump_trusted(value: Any) -> bytes:
    """Pickle a request for the worker; GraphModules keep their nodes' fake values (GraphPickler)."""
    from torch.fx._graph_pickler import Options, _OpPickleData

    pickler = _trusted_pickler()
    original = _OpPickleData.__dict__["pickle"]
    _OpPickleData.pickle = classmethod(_pickle_any_target)  # see _pickle_any_target
    try:
        with io.BytesIO() as stream:
            pickler(stream, Options(ops_filter=None, node_metadata_key_filter=_meta_key_kept)).dump(value)
            return stream.getvalue()
    finally:
        _OpPickleData.pickle = original


class _PlainTarget:
    """A call_function target GraphPickler cannot name (a user's own function): pickled as the function
    itself, which the pickler turns into a reference or a stand-in (see _function_reference)."""

    def __init__(self, function: Any) -> None:
        self.function = function

    def unpickle(self, unpickle_state: Any) -> Any:
        return self.function


def _pickle_any_target(cls: type, op: object, options: Any) -> Any:
    """GraphPickler's own target pickling, except that a plain Python function it refuses (it only names
    torch's and a few libraries' functions) travels by reference instead of failing the whole graph."""
    from torch.fx._graph_pickler import _OpPickleData

    try:
        return _OpPickleData.__dict__["_original_pickle"].__func__(cls, op, options)
    except NotImplementedError:
        if callable(op):
            return _PlainTarget(op)
        raise


def load_trusted(payload: bytes) -> Any:
    """Unpickle a request from the trusted side (worker side). As GraphPickler.loads, except that the fake
    tensor mode is made only for a request that holds fake tensors (an uploaded graph): making one costs
    about half a millisecond, and most requests are a call with a node or two as arguments."""
    from torch.fx._graph_pickler import _GraphUnpickler, patch_pytree_map_over_slice

    with patch_pytree_map_over_slice(), io.BytesIO(payload) as stream:
        return _GraphUnpickler(stream, _LazyUnpickleState()).load()


class _LazyUnpickleState:
    """GraphPickler's _UnpickleState, with its fake mode and meta converter made on first use."""

    def __init__(self) -> None:
        self._fake_mode: Any = None
        self._meta_converter: Any = None

    @property
    def fake_mode(self) -> Any:
        if self._fake_mode is None:
            from torch._subclasses.fake_tensor import FakeTensorMode
            from torch.fx.experimental.symbolic_shapes import ShapeEnv

            self._fake_mode = FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)
        return self._fake_mode

    @property
    def meta_converter(self) -> Any:
        if self._meta_converter is None:
            from torch._subclasses.meta_utils import MetaConverter

            self._meta_converter = MetaConverter()
        return self._meta_converter


_PICKLER: type | None = None

# Modules the trusted side loaded from a file under a name that is not importable (a kata's hidden checks,
# probes and suspects: kata folders are not packages): module name -> file. A function of one of them
# reaches the worker as "load that file, take this attribute" (suspects and probes must really run there).
# The checks module itself and the reference never load in the worker: their functions arrive as stand-ins
# that keep their names (kata 4 asks what a user's own function called `gelu` is) and cannot be called.
# (checker.core.modules.LOADED_FROM_FILES records them as it loads them.)
_STAND_IN_MODULES = ("kata_hidden_checks", "reference_")


def _function_reference(fn: Any) -> tuple:
    module = fn.__module__
    if module.startswith(_STAND_IN_MODULES):
        return _stand_in_function, (module, fn.__qualname__, fn.__name__)
    return _from_file, (module, LOADED_FROM_FILES[module], fn.__qualname__)


def _from_file(module: str, path: str, qualname: str) -> Any:
    import sys
    from pathlib import Path

    if module not in sys.modules:
        load_module(Path(path), module)
    found: Any = sys.modules[module]
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def _stand_in_function(module: str, qualname: str, name: str) -> Any:
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{qualname} is defined in the kata's hidden checks and only runs there")

    stand_in.__module__, stand_in.__qualname__, stand_in.__name__ = module, qualname, name
    return stand_in


def _trusted_pickler() -> type:
    """GraphPickler, with two changes: a fake tensor travels as its shape, strides and dtype (torch's own
    description also carries its view base and fake mode, which may hold unpicklable tracing state), and a
    GraphModule is pickled as it is, without the `recompile()` GraphPickler does first: a module whose
    forward is stale must stay stale here."""
    global _PICKLER
    if _PICKLER is not None:
        return _PICKLER
    import torch
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.fx._graph_pickler import GraphPickler, _GraphModulePickleData, _GraphPickleData

    class TrustedPickler(GraphPickler):
        def reducer_override(self, obj: object) -> Any:
            if isinstance(obj, FakeTensor):
                spec = (tuple(obj.shape), tuple(obj.stride()), obj.dtype, obj.device.type, obj.requires_grad)
                return _fake_from_spec, (*spec, self._unpickle_state)
            if isinstance(obj, torch.fx.GraphModule):
                data = _GraphModulePickleData.__new__(_GraphModulePickleData)
                data.gm_dict = _graph_module_state(obj)
                data.graph = _GraphPickleData(obj._graph, self.options)
                return _GraphModulePickleData.unpickle, (data, self._unpickle_state)
            if isinstance(obj, torch.nn.Module) and not _picklable(obj):
                return _OpaqueModule, (type(obj).__qualname__,)
            if isinstance(obj, torch.ScriptObject):  # e.g. a profiler record in make_fx's meta["val"]
                return _none, ()
            if isinstance(obj, types.FunctionType) and obj.__module__ in LOADED_FROM_FILES:
                return _function_reference(obj)
            return super().reducer_override(obj)

    from torch.fx._graph_pickler import _OpPickleData

    if "_original_pickle" not in _OpPickleData.__dict__:
        _OpPickleData._original_pickle = _OpPickleData.__dict__["pickle"]
    _PICKLER = TrustedPickler
    return _PICKLER


# Attributes Dynamo and export leave on a GraphModule that describe how it was traced, not what it computes.
_GRAPH_MODULE_STATE_LEFT_OUT = frozenset({"_graph", "shape_env", "compile_subgraph_reason", "_param_name_to_source",
                                          "_source_to_user_stacks", "meta"})
_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks", "_forward_hooks_with_kwargs",
          "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called", "_state_dict_hooks", "_state_dict_pre_hooks",
          "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")


def _graph_module_state(gm: Any) -> dict:
    """A GraphModule's __dict__ as the worker gets it: without tracing state, hooks (export's unlifted module
    checks its inputs with closures) or functions set on the instance; the graph and code are what count."""
    import types
    from collections import OrderedDict

    state = {k: v for k, v in gm.__dict__.items()
             if k not in _GRAPH_MODULE_STATE_LEFT_OUT and not isinstance(v, (types.FunctionType, types.MethodType))}
    for name in _HOOKS:
        if name in state:
            state[name] = OrderedDict()
    # every GraphModule torch makes has `meta`, and attempts may read it: what pickles travels (export's
    # inline_constraints, Dynamo's compile id); tracing state that cannot (a shape environment) stays behind
    state["meta"] = {k: v for k, v in getattr(gm, "meta", {}).items() if _picklable(v)}
    return state


def _picklable(value: Any) -> bool:
    import pickle

    try:
        pickle.dumps(value)
    except Exception:  # noqa: BLE001 - anything pickle refuses
        return False
    return True


def _none() -> None:
    return None


def _opaque_module(type_name: str) -> Any:
    import torch

    class Unpicklable(torch.nn.Module):
        """Stands for a submodule that could not be sent to the worker (it holds closures)."""

        original_type = type_name

    return Unpicklable()


_OpaqueModule = _opaque_module


def _fake_from_spec(shape: tuple, stride: tuple, dtype: Any, device: str, requires_grad: bool, state: Any) -> Any:
    import torch

    with state.fake_mode:
        return torch.empty_strided(shape, stride, dtype=dtype, device=device, requires_grad=requires_grad)


# node.meta keys that reach the worker: shapes and dtypes a pass may read, and where a node came from; the
# rest holds references to tracing state (weak dictionaries, frames) that neither pickles nor means anything
# in another process.
_KEPT_META = frozenset({"val", "example_value", "tensor_meta", "stack_trace"})


def _meta_key_kept(key: str) -> bool:
    return key in _KEPT_META


def close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


# --- references: the trusted side names an object the worker already holds -----------------------------

class GraphRef:
    """A GraphModule the worker holds, by the key it was uploaded under."""

    def __init__(self, key: int) -> None:
        self.key = key


class NodeRef:
    def __init__(self, key: int, name: str) -> None:
        self.key, self.name = key, name


class ModuleRef:
    def __init__(self, key: int, name: str) -> None:
        self.key, self.name = key, name


class HandleRef:
    def __init__(self, handle: int) -> None:
        self.handle = handle
