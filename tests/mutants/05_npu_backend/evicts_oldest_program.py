"""Mistake: when the program memory is full, the partition releases its oldest program and compiles the new shape
in its place. No warning is needed -- but the evicted shape has to compile again the next time it comes, and a
workload that cycles through more shapes than fit compiles on every call."""
from checker.kit import load_reference
from katas.common.npu import NPU, NPUCompileError

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ('full_program_memory_falls_back_loudly', 'weight_changes_while_program_memory_fills')

_original = _ref.NPUPartition.compile_program


def compile_program(self, args, frozen):
    graph = _ref.freeze_inputs(self.on_cpu, {i: args[i] for i in frozen}) if frozen else self.on_cpu
    inputs = [a for i, a in enumerate(args) if i not in frozen]
    try:
        return NPU.compile(graph, inputs, name=self.name)
    except NPUCompileError as error:
        oldest = next((key for key, program in self.programs.items() if program is not None), None)
        if "memory is full" not in str(error) or oldest is None:
            return _original(self, args, frozen)
        self.programs.pop(oldest).release()
        return NPU.compile(graph, inputs, name=self.name)


_ref.NPUPartition.compile_program = compile_program
