"""Mistake: operator.getitem "only unpacks", so it runs wherever its producer runs: supported exactly when its
producer is. On a multi-output op (max, split, cond) both rules agree, since none is an NPU op; on a tensor an NPU
op produced (`fc(x)[0]`, `h[:, 1:]` in Dynamo and symbolic_trace graphs) the getitem goes to the NPU. getitem is no
op and not in NPU_OPS: it is "cpu", always (blind round 1, W01)."""
import operator

import torch.fx

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")


class NPUOperatorSupport(_ref.NPUOperatorSupport):
    def is_node_supported(self, submodules, node):
        if node.op == "call_function" and node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node):
            return self.is_node_supported(submodules, node.args[0])  # the wrong rule
        return super().is_node_supported(submodules, node)


_ref.NPUOperatorSupport = NPUOperatorSupport  # classify asks this one

KILLED_BY = ("getitem_is_a_cpu_call_node",)

canonical_op, classify = _ref.canonical_op, _ref.classify
