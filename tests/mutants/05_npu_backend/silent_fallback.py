"""Mistake: silent fallback. Refused signatures and failed calls do run on the CPU -- so every answer is right --
but nothing tells the user, who goes on believing the NPU ran their model."""
from checker.kit import load_reference
from katas.common.npu import NPUCompileError, NPURuntimeError

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = (
    "float64_falls_back_loudly",
    "injected_fault_reruns_that_call_on_cpu",
    "memory_others_hold_falls_back_for_that_call",
)

def program_for(self, args, frozen):
    key = _ref.signature(args)
    if key in self.refused:
        return None
    try:
        program = _ref.PROGRAMS.get((id(self), key), lambda: self.compile_program(args, frozen))
    except NPUCompileError as error:
        if error.what != "program":
            self.refused.add(key)
        return None  # stays on the CPU, and nobody hears about it
    self.signatures.add(key)
    return program


def run_on_npu(self, program, inputs, args):
    try:
        return program(*inputs)
    except NPURuntimeError:
        return self.on_cpu(*args)


_ref.NPUPartition.program_for = program_for
_ref.NPUPartition.run_on_npu = run_on_npu
