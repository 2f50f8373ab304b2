"""Mistake: the identity table lists torch.add and torch.mul but not operator.add / operator.mul /
operator.matmul. `a + b` in forward traces to operator.add, so residual adds fall back to the CPU and
split the NPU's work in two."""
import operator

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_right_canonical_op = _ref.canonical_op

KILLED_BY = ("torch_graphs_of_npu_ops_run_fully_on_npu", "module_graphs_of_npu_ops_run_fully_on_npu")


def canonical_op(node, submodules):
    if node.op == "call_function" and node.target in (operator.add, operator.mul, operator.matmul):
        return None
    return _right_canonical_op(node, submodules)


_ref.canonical_op = canonical_op
NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
