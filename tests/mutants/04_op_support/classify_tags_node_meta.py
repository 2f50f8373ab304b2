"""Mistake: classify writes its verdict into node.meta["npu"] for a backend to read. The verdicts are right, but
nothing modifies the graph, node.meta included: other passes read it (blind round 2, wrong_tags_nodes)."""
from checker.kit import load_reference

_ref = load_reference("04_op_support", "op_support.py")
_classify = _ref.classify


def classify(gm):
    verdicts = _classify(gm)
    for node in gm.graph.nodes:
        if node.name in verdicts:
            node.meta["npu"] = verdicts[node.name] == "npu"  # the wrong rule
    return verdicts


KILLED_BY = ("generated_programs_agree_with_reference",)

canonical_op, NPUOperatorSupport = _ref.canonical_op, _ref.NPUOperatorSupport
