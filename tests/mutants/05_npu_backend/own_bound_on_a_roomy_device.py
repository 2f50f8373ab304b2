"""Mistake: "keep a bounded cache, 16 programs is plenty". On the 64-slot NPU, a workload of more signatures than
16 recompiles (and re-uploads) programs the device had room to keep. The lesson: "While the NPU has room, a new
signature compiles its program. Do not invent a bound of your own: an NPU with free slots is idle for nothing."."""
from checker.kit import load_reference
from katas.common.npu import KeptPrograms

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("new_batch_sizes_run_on_npu",)

_ref.PROGRAMS = KeptPrograms(size=16)
