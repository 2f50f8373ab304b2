"""Mistake: only call_module and call_function are resolved; call_method nodes (x.t(), x.sigmoid(),
x.view(...)) get None and run on the CPU, although a method is the same op as the function."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_right_canonical_op = _ref.canonical_op

KILLED_BY = (
    "call_method_nodes_resolve_by_method_name",
    "canonical_names_in_every_dialect",
    "in_place_forms_are_not_their_functional_op",
    "module_graphs_send_cpu_ops_to_cpu",
    "partitions_match_reference_on_zoo",
    "size_arithmetic_is_no_npu_op",
    "torch_graphs_of_npu_ops_run_fully_on_npu",
    "torch_graphs_send_cpu_ops_to_cpu",
)


def canonical_op(node, submodules):
    if node.op == "call_method":
        return None
    return _right_canonical_op(node, submodules)


_ref.canonical_op = canonical_op
NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
