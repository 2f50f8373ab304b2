"""Mistake: only OpOverloads need their namespace parsed; the one packet a graph holds is the lesson's
`kata.linear_gelu`, so packets are looked up by identity like any other callable. A call to torch.ops.aten.relu
(the packet, kept by Dynamo and symbolic_trace) is then unknown and goes to the CPU. The rule is the same for
packets and overloads: the packet's name, if its namespace is aten or kata (blind round 1, W07)."""
import torch

from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_canonical = _ref.canonical_op


def canonical_op(node, submodules):
    if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverloadPacket):
        return "linear_gelu" if node.target is torch.ops.kata.linear_gelu else None  # the wrong rule
    return _canonical(node, submodules)


_ref.canonical_op = canonical_op  # NPUOperatorSupport and classify ask this one

KILLED_BY = ("canonical_names_in_every_dialect",)

NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
