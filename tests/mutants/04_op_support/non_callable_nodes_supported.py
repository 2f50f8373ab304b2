"""Mistake: is_node_supported keeps torch's OperatorSupport default and says True for every node that is
not a call: placeholder, get_attr and output. CapabilityBasedPartitioner(..., allows_single_node_partition=
True) then pulls the graph's inputs and its output into the NPU partition."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
canonical_op, classify = _ref.canonical_op, _ref.classify

KILLED_BY = (
    "aten_graphs_of_npu_ops_run_fully_on_npu",
    "aten_graphs_send_cpu_ops_to_cpu",
    "aten_random_mlps_agree_with_reference",
    "call_method_nodes_resolve_by_method_name",
    "core_aten_graphs_of_npu_ops_run_fully_on_npu",
    "core_aten_graphs_send_cpu_ops_to_cpu",
    "core_aten_random_mlps_agree_with_reference",
    "custom_op_linear_gelu_runs_on_npu",
    "custom_ops_of_other_namespaces_stay_on_cpu",
    "generated_programs_agree_with_reference",
    "getitem_is_a_cpu_call_node",
    "higher_order_ops_are_cpu_call_nodes",
    "in_place_forms_are_not_their_functional_op",
    "module_graphs_of_npu_ops_run_fully_on_npu",
    "module_graphs_send_cpu_ops_to_cpu",
    "module_random_mlps_agree_with_reference",
    "module_subclasses_count_only_with_their_base_forward",
    "modules_resolve_by_type_not_attribute_name",
    "one_support_answers_each_node_as_it_is_now",
    "partitions_match_reference_on_random_mlps",
    "partitions_match_reference_on_zoo",
    "size_arithmetic_is_no_npu_op",
    "structural_nodes_are_never_supported",
    "support_ignores_dtype",
    "torch_graphs_of_npu_ops_run_fully_on_npu",
    "torch_graphs_send_cpu_ops_to_cpu",
    "torch_random_mlps_agree_with_reference",
    "user_function_named_gelu_stays_on_cpu",
)


class NPUOperatorSupport(_ref.NPUOperatorSupport):
    def is_node_supported(self, submodules, node):
        if node.op not in ("call_module", "call_function", "call_method"):
            return True  # what torch.fx.passes.operator_support.OperatorSupport does
        return super().is_node_supported(submodules, node)
