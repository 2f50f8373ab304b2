"""Mistake: the root is the caller's, but the subgraphs are an implementation detail, so detect_dialect recompiles
each subgraph it walks (to read fresh code). The root's code is untouched; the branches' code and forward are not.
Breaks "`detect_dialect` must leave the graph and its subgraphs exactly as it found them — ... no `recompile()`"."""
from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("unread_nodes_count_and_the_graph_is_left_alone",)


def detect_dialect(gm):
    for path, module in gm.named_modules():
        if path and isinstance(module, _ref.torch.fx.GraphModule):
            module.recompile()
    return _ref.detect_dialect(gm)
