"""Mistake: on an NPURuntimeError the whole graph reruns on the CPU, instead of only the partition that failed.
Right answer, loud warning, but one faulty program throws away every other partition's NPU work for that call."""
import warnings

from checker.kit import load_reference
from katas.common.npu import NPUFallbackWarning, NPURuntimeError

_ref = load_reference("05_npu_backend", "backend.py")

KILLED_BY = ("injected_fault_reruns_that_call_on_cpu", "registered_as_kata_npu")


def npu_backend(gm, example_inputs):
    compiled = _ref.npu_backend(gm, example_inputs)

    def run(*args):
        try:
            return compiled(*args)
        except NPURuntimeError as error:
            warnings.warn(f"the graph reran on the CPU: {error}", NPUFallbackWarning)
            return gm(*args)

    return run


def run_on_npu(self, program, inputs, args):
    return program(*inputs)  # errors go up to npu_backend's wrapper


_ref.NPUPartition.run_on_npu = run_on_npu
