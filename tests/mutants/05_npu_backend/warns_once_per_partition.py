"""Mistake (blind round 1, wrong_warn_once_per_partition): "one warning per partition is loud enough". The first
signature the NPU refuses warns; every later refused signature of the same partition runs on the CPU in silence,
though each is another set of calls the accelerator no longer runs."""
import warnings

from checker.kit import load_reference
from katas.common.npu import NPUFallbackWarning

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("memory_others_hold_falls_back_for_that_call",)

_original = _ref.NPUPartition.program_for


def program_for(self, args, frozen):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = _original(self, args, frozen)
    for warning in caught:
        if issubclass(warning.category, NPUFallbackWarning):
            if getattr(self, "warned", False):
                continue
            self.warned = True
        warnings.warn(warning.message, warning.category)
    return program


_ref.NPUPartition.program_for = program_for
