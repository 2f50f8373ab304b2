"""Mistake: the bookkeeping is the five calls a torch.vmap leaves (lazy_load_decompositions, _vmap_increment_nesting,
_add_batch_dim, _remove_batch_dim, _vmap_decrement_nesting), listed by name; torch.func.jvp's _make_dual,
_unpack_dual, _jvp_increment_nesting, ... stay torch-level. Breaks "any function of the module
`torch._functorch.predispatch` (`target.__module__`): vmap's ...; jvp's ..."."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError = _ref.Dialect, _ref.MixedDialectError

KILLED_BY = ("functorch_bookkeeping_is_neutral",)

_VMAP = frozenset({"lazy_load_decompositions", "_vmap_increment_nesting", "_add_batch_dim", "_remove_batch_dim",
                   "_vmap_decrement_nesting"})


def node_dialect(node):
    target = node.target
    if node.op == "call_function" and getattr(target, "__module__", None) == _ref.FUNCTORCH_BOOKKEEPING:
        return None if target.__name__ in _VMAP else Dialect.TORCH
    return _ref.node_dialect(node)


def detect_dialect(gm):
    first = {}
    for node in _ref.graph_nodes(gm):
        dialect = node_dialect(node)
        if dialect is not None:
            first.setdefault(dialect, node)
    aten_node = first.get(Dialect.ATEN) or first.get(Dialect.CORE_ATEN)
    high_node = first.get(Dialect.MODULE) or first.get(Dialect.TORCH)
    if aten_node is not None and high_node is not None:
        raise MixedDialectError(f"graph mixes levels: node {high_node.name!r} but node {aten_node.name!r}")
    for dialect in (Dialect.MODULE, Dialect.TORCH, Dialect.ATEN, Dialect.CORE_ATEN):
        if dialect in first:
            return dialect
    return Dialect.TORCH
