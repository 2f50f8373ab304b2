"""Mistake: an OpOverload is named by its __name__, which keeps the overload ("addmm.default",
"add.Tensor"), so no aten node matches NPU_OPS and aten graphs run entirely on the CPU."""
import torch

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_right_canonical_op = _ref.canonical_op

KILLED_BY = ("aten_graphs_of_npu_ops_run_fully_on_npu", "core_aten_graphs_of_npu_ops_run_fully_on_npu",
             "custom_op_linear_gelu_runs_on_npu")


def canonical_op(node, submodules):
    if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
        return node.target.__name__
    return _right_canonical_op(node, submodules)


_ref.canonical_op = canonical_op
NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
