"""Mistake: a signature the NPU refused is not remembered. Every call of it asks NPU.compile again (and warns
again): correct and loud, but a compile attempt per call for a shape that will never fit."""
from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ('full_program_memory_falls_back_loudly', 'weight_changes_while_program_memory_fills')


def program_for(self, args, frozen):
    key = _ref.signature(args)
    if self.programs.get(key) is None:
        self.programs[key] = self.compile_program(args, frozen)
    return self.programs[key]


_ref.NPUPartition.program_for = program_for
