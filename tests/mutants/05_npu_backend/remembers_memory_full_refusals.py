"""Mistake: "remember every refusal". A signature refused because other code filled program memory is remembered
like a float64 graph, so it runs on the CPU for good, long after the memory is free again."""
from checker.kit import load_reference
from katas.common.npu import NPUCompileError

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("memory_others_hold_falls_back_for_that_call",)

_original = _ref.NPUPartition.program_for


def program_for(self, args, frozen):
    key = _ref.signature(args)
    program = _original(self, args, frozen)
    if program is None:
        self.refused.add(key)  # memory-full refusals too
    return program


_ref.NPUPartition.program_for = program_for
