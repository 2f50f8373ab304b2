"""Mistake: "core" is taken to mean "export's default decomposition table has no entry for it", instead of
`torch.Tag.core in op.tags`. aten.chunk and aten.reshape have no entry, yet they are not core."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError
_right_node_dialect = _ref.node_dialect
_DECOMPOSED = set(torch.export.default_decompositions())

KILLED_BY = (
    "core_means_the_core_tag",
    "every_subgraph_of_every_higher_order_op_counts",
    "functorch_bookkeeping_is_neutral",
    "prims_graphs_are_aten",
    "symbolic_batch_graphs_are_aten",
)


def node_dialect(node):
    dialect = _right_node_dialect(node)
    if dialect in (Dialect.ATEN, Dialect.CORE_ATEN):
        return Dialect.ATEN if node.target in _DECOMPOSED else Dialect.CORE_ATEN
    return dialect


# the reference's detect_dialect calls the module-level node_dialect: point it at the mistake
_ref.node_dialect = node_dialect
detect_dialect = _ref.detect_dialect
