"""Probes for kata 4's checks: the questions that must be asked where the attempt's code runs.

A probe takes the attempt module and plain data (or a graph) and returns plain data. It asserts nothing and
knows no right answer; checks.py judges.
"""
from __future__ import annotations

import importlib.util
import itertools
import sys
from types import ModuleType

import torch.fx

_fresh_ids = itertools.count()


def _fresh_copy(attempt: ModuleType) -> ModuleType:
    """A new instance of the attempt's module, imported from its file now (its module-level code runs again)."""
    name = f"kata04_attempt_fresh_{next(_fresh_ids)}"
    spec = importlib.util.spec_from_file_location(name, attempt.__file__)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and typing look their module up while the file runs
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def probe_classify_on_changed_npu(attempt: ModuleType, gm: torch.fx.GraphModule,
                                  removed_ops: list[str]) -> dict[str, str]:
    """classify(gm) of the attempt imported while `katas.common.npu.NPU_OPS` lacks `removed_ops` (an NPU whose
    firmware has no such kernels), as {node name: verdict value}. NPU_OPS is restored afterwards."""
    import katas.common.npu as npu

    original = npu.NPU_OPS
    npu.NPU_OPS = original - frozenset(removed_ops)
    try:
        verdicts = _fresh_copy(attempt).classify(gm)
        return {str(name): str(getattr(verdict, "value", verdict)) for name, verdict in dict(verdicts).items()}
    finally:
        npu.NPU_OPS = original
