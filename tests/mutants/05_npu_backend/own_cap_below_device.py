"""Mistake: the backend invents its own bound, four programs per partition, and sends every further shape to the
CPU (with a warning) although the NPU still has room. Loud, correct, and an idle accelerator."""
from checker.kit import load_reference
from katas.common.npu import NPUCompileError

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = (
    "full_program_memory_releases_the_least_recently_used",
    "new_batch_sizes_run_on_npu",
    "weight_changes_while_program_memory_fills",
)

CAP = 4
_original = _ref.NPUPartition.compile_program


def compile_program(self, args, frozen):
    held = sum((id(self), key) in _ref.PROGRAMS for key in self.signatures)
    if held >= CAP:
        raise NPUCompileError(self.name, f"this partition already has {CAP} programs")
    return _original(self, args, frozen)


_ref.NPUPartition.compile_program = compile_program
