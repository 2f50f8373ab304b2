"""Mistake (blind round 2, wrong_warn_first_fault_only): "one fault warning per partition is enough": later faults of
the same partition rerun on the CPU in silence, so a user counting warnings never learns how often the NPU failed."""
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
        if not getattr(self, "fault_warned", False):
            self.fault_warned = True
            warnings.warn(f"{self.name} reran on the CPU for this call: {error}", _ref.NPUFallbackWarning)
        return self.on_cpu(*args)


_ref.NPUPartition.run_on_npu = run_on_npu
