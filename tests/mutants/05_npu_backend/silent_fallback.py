"""Mistake: silent fallback. Refused signatures and failed calls do run on the CPU -- so every answer is right --
but nothing tells the user, who goes on believing the NPU ran their model."""
from checker.kit import load_reference
from katas.common.npu import NPU, NPUCompileError, NPURuntimeError

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = (
    'float64_falls_back_loudly',
    'full_program_memory_falls_back_loudly',
    'injected_fault_reruns_that_call_on_cpu',
    'weight_changes_while_program_memory_fills',
)


def compile_program(self, args, frozen):
    graph = _ref.freeze_inputs(self.on_cpu, {i: args[i] for i in frozen}) if frozen else self.on_cpu
    try:
        return NPU.compile(graph, [a for i, a in enumerate(args) if i not in frozen], name=self.name)
    except NPUCompileError:
        return None  # stays on the CPU, and nobody hears about it


def run_on_npu(self, program, inputs, args):
    try:
        return program(*inputs)
    except NPURuntimeError:
        return self.on_cpu(*args)


_ref.NPUPartition.compile_program = compile_program
_ref.NPUPartition.run_on_npu = run_on_npu
