"""Mistake: no runtime fallback. NPU.compile errors are handled, but an NPURuntimeError (a device fault) escapes
the program call and reaches the user."""
from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("injected_fault_reruns_that_call_on_cpu",)


def run_on_npu(self, program, inputs, args):
    return program(*inputs)


_ref.NPUPartition.run_on_npu = run_on_npu
