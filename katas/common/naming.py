"""Naming graph nodes for people: what a hidden check's message or a `make diff` sample prints."""
from __future__ import annotations

import torch
import torch.fx

# Where Python says a builtin lives, and where a learner would look for it.
MODULE_ALIASES = {"_operator": "operator", "builtins": ""}


def target_name(target: object) -> str:
    """A call target as a person writes it: `aten.addmm.default`, `torch._C._nn.linear`, `operator.add`,
    or the string itself for call_module / call_method / get_attr targets."""
    if isinstance(target, str):
        return target
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return str(target)
    module = getattr(target, "__module__", None) or ""
    module = MODULE_ALIASES.get(module, module)
    return f"{module}.{getattr(target, '__name__', target)}".lstrip(".")


def module_type_name(gm: torch.nn.Module, node: torch.fx.Node) -> str | None:
    """The class name of the module a call_module node calls, or None if there is no such submodule."""
    try:
        return type(gm.get_submodule(node.target)).__name__
    except AttributeError:
        return None
