"""Mistake (blind round 1, wrong_budget_counts_dropped): each partition keeps a budget of its own, "like Dynamo's
recompile_limit": at most DEVICE.max_resident_programs programs compiled, counted for good, dropped ones included. After a
weight change has dropped stale programs the device has free slots, but the spent budget sends new shapes to the CPU
(with a warning). The lesson: while the NPU has room, a new signature compiles; invent no bound of your own."""
from checker.kit import load_reference
from katas.common.npu import DEVICE, NPUCompileError

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("full_program_memory_releases_the_least_recently_used", "weight_changes_while_program_memory_fills")

_original = _ref.NPUPartition.compile_program


def compile_program(self, args, frozen):
    spent = getattr(self, "compiled_ever", 0)
    if spent >= DEVICE.max_resident_programs:
        raise NPUCompileError(self.name, f"its budget of {spent} programs is spent")
    program = _original(self, args, frozen)
    self.compiled_ever = spent + 1
    return program


_ref.NPUPartition.compile_program = compile_program
