"""Mistake: classify skips operator.getitem, treating it as bookkeeping. The lesson defines every
call_function node, getitem included, as a call node; kata 5's backend needs a verdict for each."""
import operator

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
canonical_op, NPUOperatorSupport = _ref.canonical_op, _ref.NPUOperatorSupport

KILLED_BY = (
    'aten_graphs_send_cpu_ops_to_cpu',
    'aten_random_mlps_agree_with_reference',
    'call_method_nodes_resolve_by_method_name',
    'core_aten_graphs_send_cpu_ops_to_cpu',
    'getitem_is_a_cpu_call_node',
    'higher_order_ops_are_cpu_call_nodes',
    'module_graphs_send_cpu_ops_to_cpu',
    'partitions_match_reference_on_zoo',
    'torch_graphs_send_cpu_ops_to_cpu',
)


def classify(gm):
    verdicts = _ref.classify(gm)
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is operator.getitem:
            verdicts.pop(node.name)
    return verdicts
