"""Mistake (blind round 1, wrong_budget_counts_dropped): each partition keeps a budget of its own, "like Dynamo's
recompile_limit": at most MAX_RESIDENT_PROGRAMS programs compiled, counted for good, dropped ones included. After a
weight change has dropped stale programs the device has free slots, but the spent budget sends new shapes to the CPU
(with a warning). The lesson: while the NPU has room, a new signature compiles; invent no bound of your own."""
import warnings

from checker.kit import load_reference
from katas.common.npu import MAX_RESIDENT_PROGRAMS, NPUFallbackWarning

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("weight_changes_while_program_memory_fills",)

_original = _ref.NPUPartition.compile_program


def compile_program(self, args, frozen):
    spent = getattr(self, "compiled_ever", 0)
    if spent >= MAX_RESIDENT_PROGRAMS:
        warnings.warn(f"{self.name} runs on the CPU for inputs {_ref.describe_inputs(args)}: its budget of {spent} "
                      f"programs is spent", NPUFallbackWarning)
        return None
    program = _original(self, args, frozen)
    if program is not None:
        self.compiled_ever = spent + 1
    return program


_ref.NPUPartition.compile_program = compile_program
