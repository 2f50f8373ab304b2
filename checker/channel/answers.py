"""What the worker's answers become on the trusted side: data, and nothing that runs the worker's code.

The worker sends plain values and a few tagged records (checker/channel/wire.py, `to_plain`); `from_plain` turns
them back into Python values, records (`RemoteRecord`, `RemoteEnumMember`, `TensorSpec`) and, where the caller
allows it, handles of objects that stay in the worker. Anything malformed is a `ProtocolError`: the channel is
broken, not the check.
"""
from __future__ import annotations

import collections
import enum
import types
from dataclasses import dataclass
from typing import Any, Callable

from checker.channel.wire import TAG


class ChannelBroken(BaseException):
    """The worker cannot be talked to any more: it died, or what it sent is not an answer.

    A BaseException, like KeyboardInterrupt, so that neither Hypothesis nor a check's `except Exception`
    mistakes it for a wrong answer and goes on calling a process that is gone. The run restarts the worker
    for the next check."""


class WorkerDied(ChannelBroken):
    """The worker process ended while the checks were waiting for it."""


class ProtocolError(ChannelBroken):
    """The worker sent something that is not a well-formed answer (an attempt that writes into the channel's
    file descriptor gets this)."""


# --- decoding what the worker sends -------------------------------------------------------------------------

@dataclass(frozen=True)
class TensorSpec:
    """A fake or meta tensor the worker described by its shape and dtype."""

    shape: tuple
    dtype: Any


class RemoteRecord(types.SimpleNamespace):
    """A dataclass instance the attempt returned, as its fields (`record.filename`, `record.lineno`)."""

    def __init__(self, cls_name: str, fields: dict) -> None:
        super().__init__(**fields)
        object.__setattr__(self, "_cls_name", cls_name)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if k != "_cls_name")
        return f"{self._cls_name}({fields})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RemoteRecord):
            return vars(self) == vars(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class RemoteEnumMember:
    """A member of the attempt's enum: compares equal to its value and to a member with the same name and value."""

    def __init__(self, cls_name: str, name: str, value: Any) -> None:
        self.cls_name, self.name, self.value = cls_name, name, value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RemoteEnumMember):
            return (self.name, self.value) == (other.name, other.value)
        if isinstance(other, enum.Enum):
            return (self.name, self.value) == (other.name, other.value)
        return self.value == other

    def __hash__(self) -> int:
        return hash(self.value)

    def __str__(self) -> str:
        return str(self.value) if isinstance(self.value, str) else f"{self.cls_name}.{self.name}"

    def __repr__(self) -> str:
        return f"<{self.cls_name}.{self.name}: {self.value!r}>"


def from_plain(data: Any, handles: Callable[[dict], Any] | None = None) -> Any:
    """What the worker sent, as Python values. Malformed data raises ProtocolError; nothing here runs code the
    worker chose."""
    try:
        return _decode(data, handles, 0)
    except ProtocolError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ProtocolError(f"a malformed answer from the process running your code ({error})") from None


def _decode(data: Any, handles: Callable[[dict], Any] | None, depth: int) -> Any:
    import torch

    if depth > 80:
        raise ProtocolError("an answer nested too deeply")
    if data is None or isinstance(data, (bool, int, float, str, bytes, torch.dtype, torch.device, torch.Size)):
        return data
    if isinstance(data, torch.Tensor):
        return data
    if isinstance(data, (list, tuple)):  # torch.load keeps plain lists and tuples as they are
        return type(data)(_decode(v, handles, depth + 1) for v in data)
    if not isinstance(data, dict) or TAG not in data:
        if isinstance(data, dict):
            return {k: _decode(v, handles, depth + 1) for k, v in data.items()}
        raise ProtocolError(f"an answer of type {type(data).__name__}")
    kind = data[TAG]
    decode = lambda v: _decode(v, handles, depth + 1)  # noqa: E731
    if kind == "list":
        return [decode(v) for v in data["items"]]
    if kind == "tuple":
        return tuple(decode(v) for v in data["items"])
    if kind == "set":
        return {decode(v) for v in data["items"]}
    if kind == "dict":
        return {decode(k): decode(v) for k, v in data["items"]}
    if kind == "counter":
        return collections.Counter({decode(k): decode(v) for k, v in data["items"]})
    if kind == "enum":
        return RemoteEnumMember(str(data["cls"]), str(data["name"]), decode(data["value"]))
    if kind == "record":
        return RemoteRecord(str(data["cls"]), {str(k): decode(v) for k, v in data["fields"].items()
                                              if str(k).isidentifier()})
    if kind == "exception":
        return RemoteRecord(str(data["cls"]), {"message": str(data["message"])})
    if kind == "tensor":
        value = data["value"]
        if not isinstance(value, torch.Tensor):
            raise ProtocolError("a tensor that is not a tensor")
        return value.requires_grad_(True) if data.get("requires_grad") and value.is_floating_point() else value
    if kind == "tensor_spec":
        return TensorSpec(tuple(s if isinstance(s, int) else str(s) for s in data["shape"]), data["dtype"])
    if kind == "symbol":
        return str(data["text"])
    if kind == "graph":
        return RemoteRecord("GraphDescription", {"description": data["description"]})
    if kind == "handle":
        if handles is None:
            raise ProtocolError("an object where only data was expected")
        return handles(data)
    raise ProtocolError(f"an answer of unknown kind {kind!r}")
