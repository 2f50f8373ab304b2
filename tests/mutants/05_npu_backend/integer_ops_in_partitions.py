"""Mistake: "kata 4's table decides, whatever the dtype". An int64 add of position ids (`arange(seq) + 1`) joins the
partition of the float ops around it; NPU.compile refuses the whole partition, and every float op in it runs on the
CPU (warned), at every shape."""
from checker.kit import load_reference

_ref = load_reference("05_npu_backend", "backend.py")
npu_backend = _ref.npu_backend

KILLED_BY = ("integer_work_stays_on_the_host",)

_ref.NPUFloatSupport = _ref._op_support.NPUOperatorSupport
