"""Mistake: a full program memory is treated as "nothing to report". The refused shape runs on the CPU with the
right answer, but without a warning: once the NPU is full, every new shape quietly idles the accelerator."""
import warnings

from checker.kit import load_reference
from katas.common.npu import NPU, NPUCompileError, NPUFallbackWarning

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = (
    'float64_falls_back_loudly',
    'full_program_memory_falls_back_loudly',
    'weight_changes_while_program_memory_fills',
)


def compile_program(self, args, frozen):
    graph = _ref.freeze_inputs(self.on_cpu, {i: args[i] for i in frozen}) if frozen else self.on_cpu
    inputs = [a for i, a in enumerate(args) if i not in frozen]
    try:
        return NPU.compile(graph, inputs, name=self.name)
    except NPUCompileError as error:
        if "memory is full" not in str(error):  # "not an error in the model, nothing to tell the user"
            warnings.warn(f"{self.name} runs on the CPU: {error}", NPUFallbackWarning)
        return None


_ref.NPUPartition.compile_program = compile_program
