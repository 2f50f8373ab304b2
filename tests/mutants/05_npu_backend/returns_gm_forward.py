"""Mistake: the backend hands Dynamo's graph straight back (`return gm.forward`).

Every answer is exactly eager's, because the CPU ran everything; the NPU ran nothing. A numerical check alone
can never catch this, which is why the checks also read what ran on the NPU.
"""
from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")

KILLED_BY = ("supported_models_run_entirely_on_npu", "unsupported_ops_stay_on_cpu", "linear_gelu_is_one_launch",
             "random_mlps_with_cpu_ops")


def npu_backend(gm, example_inputs):
    return gm.forward


_ref.npu_backend = npu_backend
_ref.register()
