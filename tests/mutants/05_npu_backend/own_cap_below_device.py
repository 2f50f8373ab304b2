"""Mistake: the backend invents its own bound, four programs per partition, and sends every further shape to the
CPU (with a warning) although the NPU still has room. Loud, correct, and an idle accelerator."""
import warnings

from checker.kit import load_reference
from katas.common.npu import NPUFallbackWarning

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ('full_program_memory_falls_back_loudly', 'weight_changes_while_program_memory_fills')

CAP = 4
_original = _ref.NPUPartition.compile_program


def compile_program(self, args, frozen):
    if sum(program is not None for program in self.programs.values()) >= CAP:
        warnings.warn(f"{self.name} runs on the CPU for inputs {_ref.describe_inputs(args)}: this partition "
                      f"already has {CAP} programs", NPUFallbackWarning)
        return None
    return _original(self, args, frozen)


_ref.NPUPartition.compile_program = compile_program
