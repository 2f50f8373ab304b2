"""Mistake: classify skips higher-order op nodes (torch.cond, export's wrap_with_set_grad_enabled), reading
kata 1's "neutral" as "not a node to classify". They say nothing about the dialect, but the graph runs them:
a backend needs a verdict for every call node, and theirs is 'cpu'."""
import torch

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
canonical_op, NPUOperatorSupport = _ref.canonical_op, _ref.NPUOperatorSupport

KILLED_BY = ("higher_order_ops_are_cpu_call_nodes",)


def classify(gm):
    verdicts = _ref.classify(gm)
    for node in gm.graph.nodes:
        if isinstance(node.target, torch._ops.HigherOrderOperator):
            verdicts.pop(node.name)
    return verdicts
