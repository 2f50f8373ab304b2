"""Mistake: after one NPURuntimeError the partition switches to the CPU for good. The faulted call is right and
loud, but every later call stays on the CPU although the device recovered."""
import warnings

from checker.kit import load_reference
from katas.common.npu import NPUFallbackWarning, NPURuntimeError

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("injected_fault_reruns_that_call_on_cpu",)


def run_on_npu(self, program, inputs, args):
    if getattr(self, "broken", False):
        return self.on_cpu(*args)
    try:
        return program(*inputs)
    except NPURuntimeError as error:
        warnings.warn(f"{self.name} runs on the CPU from now on: {error}", NPUFallbackWarning)
        self.broken = True
        return self.on_cpu(*args)


_ref.NPUPartition.run_on_npu = run_on_npu
