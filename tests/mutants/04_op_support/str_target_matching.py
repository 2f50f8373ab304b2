"""Mistake: the op-support table is matched against str(node.target).

On aten graphs str(aten.addmm.default) is "aten.addmm.default", so splitting out "addmm" works and the
attempt looks finished. On a Dynamo graph the target is the function object itself and its str() is a repr
("<built-in function linear>"); on a symbolic_trace graph a call_module target is an attribute name ("fc1").
Nothing matches, every node silently falls back to the CPU: "why is my accelerator doing nothing?"
"""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")

KILLED_BY = (
    "canonical_names_in_every_dialect",
    "custom_op_linear_gelu_runs_on_npu",
    "custom_ops_of_other_namespaces_stay_on_cpu",
    "generated_programs_agree_with_reference",
    "getitem_is_a_cpu_call_node",
    "in_place_forms_are_not_their_functional_op",
    "module_graphs_of_npu_ops_run_fully_on_npu",
    "module_graphs_send_cpu_ops_to_cpu",
    "module_random_mlps_agree_with_reference",
    "module_subclasses_count_only_with_their_base_forward",
    "modules_resolve_by_type_not_attribute_name",
    "npu_ops_is_read_from_katas_common",
    "one_support_answers_each_node_as_it_is_now",
    "partitions_match_reference_on_random_mlps",
    "partitions_match_reference_on_zoo",
    "size_arithmetic_is_no_npu_op",
    "support_ignores_dtype",
    "torch_graphs_of_npu_ops_run_fully_on_npu",
    "torch_graphs_send_cpu_ops_to_cpu",
    "torch_random_mlps_agree_with_reference",
    "user_function_named_gelu_stays_on_cpu",
)


def canonical_op(node, submodules):
    if node.op not in ("call_module", "call_function", "call_method"):
        return None
    parts = str(node.target).split(".")  # "aten.addmm.default" -> "addmm"
    return parts[1] if len(parts) == 3 else parts[0]


# the reference's NPUOperatorSupport and classify call the module-level canonical_op: point it at the mistake
_ref.canonical_op = canonical_op
NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
