"""Mistake: NPUCompileError is caught where the graph is first compiled, but not where a new shape is compiled at
call time. Once program memory is full, the next new batch size raises NPUCompileError at the user."""
from checker.kit import load_reference
from katas.common.npu import NPU

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ('full_program_memory_falls_back_loudly', 'weight_changes_while_program_memory_fills')

_original = _ref.NPUPartition.compile_program


def compile_program(self, args, frozen):
    if not self.programs:  # the first signature: handled like at compile time
        return _original(self, args, frozen)
    graph = _ref.freeze_inputs(self.on_cpu, {i: args[i] for i in frozen}) if frozen else self.on_cpu
    return NPU.compile(graph, [a for i, a in enumerate(args) if i not in frozen], name=self.name)


_ref.NPUPartition.compile_program = compile_program
