"""Mistake (blind round 2, wrong_recompile_after_fault): "a program the device faulted in is not to be trusted", so
after a fault the partition releases it and the next call with that signature compiles (and uploads) it again,
though a fault is the device's, for that one run."""
import warnings

from checker.kit import load_reference
from katas.common.npu import NPURuntimeError

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("injected_fault_reruns_that_call_on_cpu",)


def run_on_npu(self, program, inputs, args):
    try:
        return program(*inputs)
    except NPURuntimeError as error:
        key = _ref.signature(args)
        _ref.PROGRAMS.discard((id(self), key))  # "not to be trusted": released, compiled again next call
        self.signatures.discard(key)
        warnings.warn(f"{self.name} reran on the CPU for this call: {error}", _ref.NPUFallbackWarning)
        return self.on_cpu(*args)


_ref.NPUPartition.run_on_npu = run_on_npu
