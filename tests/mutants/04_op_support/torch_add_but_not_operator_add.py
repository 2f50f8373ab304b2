"""Mistake: the identity table lists torch.add and torch.mul but not operator.add / operator.mul /
operator.matmul. `a + b` in forward traces to operator.add, so residual adds fall back to the CPU and
split the NPU's work in two."""
import operator

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_right_canonical_op = _ref.canonical_op

KILLED_BY = (
    "canonical_names_in_every_dialect",
    "custom_op_linear_gelu_runs_on_npu",
    "custom_ops_of_other_namespaces_stay_on_cpu",
    "getitem_is_a_cpu_call_node",
    "in_place_forms_are_not_their_functional_op",
    "module_graphs_of_npu_ops_run_fully_on_npu",
    "module_graphs_send_cpu_ops_to_cpu",
    "module_random_mlps_agree_with_reference",
    "npu_ops_is_read_from_katas_common",
    "partitions_match_reference_on_zoo",
    "size_arithmetic_is_no_npu_op",
    "support_ignores_dtype",
    "torch_graphs_of_npu_ops_run_fully_on_npu",
    "torch_graphs_send_cpu_ops_to_cpu",
    "torch_random_mlps_agree_with_reference",
)


def canonical_op(node, submodules):
    if node.op == "call_function" and node.target in (operator.add, operator.mul, operator.matmul):
        return None
    return _right_canonical_op(node, submodules)


_ref.canonical_op = canonical_op
NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
