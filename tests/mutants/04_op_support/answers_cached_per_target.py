"""Mistake: canonical_op remembers its answer per (node.op, node.target), so the answer for one graph's
operator.mul carries over to the next: a tensor operator.mul asked first makes a later SymInt operator.mul "mul",
and the other way round. Breaks "is_node_supported depends on the node's op only: ... not on any graph asked about
before (one answer per node, whatever order the graphs come in)" (README.md, 'The contract'; blind round 3,
wrong_01)."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_canonical = _ref.canonical_op
_seen = {}


def canonical_op(node, submodules):
    if node.op == "call_function":
        try:
            key = (node.op, node.target)
            if key not in _seen:
                _seen[key] = _canonical(node, submodules)
            return _seen[key]  # the wrong rule
        except TypeError:  # an unhashable target
            pass
    return _canonical(node, submodules)


_ref.canonical_op = canonical_op  # NPUOperatorSupport and classify ask this one

KILLED_BY = ("size_arithmetic_is_no_npu_op",)

NPUOperatorSupport, classify = _ref.NPUOperatorSupport, _ref.classify
