"""Mistake: a full program memory is treated as "nothing to report". The refused shape runs on the CPU with the
right answer, but without a warning: once the NPU is full, every new shape quietly idles the accelerator."""
import warnings

from checker.kit import load_reference
from katas.common.npu import NPUCompileError, NPUFallbackWarning

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("memory_others_hold_falls_back_for_that_call",)

def program_for(self, args, frozen):
    key = _ref.signature(args)
    if key in self.refused:
        return None
    try:
        program = _ref.PROGRAMS.get((id(self), key), lambda: self.compile_program(args, frozen))
    except NPUCompileError as error:
        if error.what != "program":  # "a full memory is not an error in the model, nothing to tell the user"
            warnings.warn(f"{self.name} runs on the CPU for inputs {_ref.describe_inputs(args)}: {error}",
                          NPUFallbackWarning)
            self.refused.add(key)
        return None
    self.signatures.add(key)
    return program


_ref.NPUPartition.program_for = program_for
