"""Mistake (blind round 2, wrong_unnamed_programs): programs are compiled with NPU.compile(gm, inputs), no name=,
and the warnings rely on the NPU's own text to say what fell back. The NPU then names the program
'npu_program_8', and no message says which partition ran on the CPU."""
from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("injected_fault_reruns_that_call_on_cpu", "memory_others_hold_falls_back_for_that_call")

_original = _ref.NPUPartition.__init__


def __init__(self, name, on_cpu, *, freeze=False):
    _original(self, name, on_cpu, freeze=freeze)
    self.name = ""  # NPU.compile(..., name="") names the program itself; the warnings start with the NPU's text


_ref.NPUPartition.__init__ = __init__
