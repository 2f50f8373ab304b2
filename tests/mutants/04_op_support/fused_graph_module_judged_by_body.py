"""Mistake: a call_module of a GraphModule (fused_0 after partition_and_fuse) is judged by the ops of its body, so
a fused partition of NPU ops is "npu". A GraphModule is no module class of the table: it is "cpu" (blind round 2,
wrong_recurse_graphmodule)."""
import torch.fx

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_canonical = _ref.canonical_op


def canonical_op(node, submodules):
    module = submodules.get(node.target) if node.op == "call_module" else None
    if isinstance(module, torch.fx.GraphModule):  # the wrong rule: look inside
        inner = dict(module.named_modules())
        ops = [canonical_op(n, inner) for n in module.graph.nodes if n.op in ("call_module", "call_function",
                                                                             "call_method")]
        return ops[-1] if ops and all(op in _ref.NPU_OPS for op in ops) else None
    return _canonical(node, submodules)


_ref.canonical_op = canonical_op  # NPUOperatorSupport and classify ask this one

KILLED_BY = ("partitions_match_reference_on_zoo",)

NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
