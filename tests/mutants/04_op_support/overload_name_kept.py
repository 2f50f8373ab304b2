"""Mistake: an OpOverload is named by its __name__, which keeps the overload ("addmm.default",
"add.Tensor"), so no aten node matches NPU_OPS and aten graphs run entirely on the CPU."""
import torch

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_right_canonical_op = _ref.canonical_op

KILLED_BY = (
    "aten_graphs_of_npu_ops_run_fully_on_npu",
    "aten_graphs_send_cpu_ops_to_cpu",
    "aten_random_mlps_agree_with_reference",
    "canonical_names_in_every_dialect",
    "core_aten_graphs_of_npu_ops_run_fully_on_npu",
    "core_aten_graphs_send_cpu_ops_to_cpu",
    "core_aten_random_mlps_agree_with_reference",
    "custom_op_linear_gelu_runs_on_npu",
    "custom_ops_of_other_namespaces_stay_on_cpu",
    "generated_programs_agree_with_reference",
    "getitem_is_a_cpu_call_node",
    "in_place_forms_are_not_their_functional_op",
    "npu_ops_is_read_from_katas_common",
    "partitions_match_reference_on_random_mlps",
    "partitions_match_reference_on_zoo",
    "size_arithmetic_is_no_npu_op",
    "support_ignores_dtype",
)


def canonical_op(node, submodules):
    if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
        return node.target.__name__
    return _right_canonical_op(node, submodules)


_ref.canonical_op = canonical_op
NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
