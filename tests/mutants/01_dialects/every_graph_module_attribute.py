"""Mistake: the program is every GraphModule the graph module holds (gm.modules()), not the subgraphs its
higher-order op nodes call. Branches a pass left behind as attributes and partitions behind call_module nodes are
read as if they ran. Blind round 1's wrong_all_submodules.py."""
import torch

from checker.kit import load_reference

_ref = load_reference("01_dialects", "dialects.py")
Dialect, MixedDialectError, node_dialect = _ref.Dialect, _ref.MixedDialectError, _ref.node_dialect

KILLED_BY = ("only_the_subgraphs_higher_order_ops_call_count", "random_programs_in_every_capture_and_edit")


def graph_nodes(gm):
    for module in gm.modules():
        if isinstance(module, torch.fx.GraphModule):
            yield from module.graph.nodes


# the reference's detect_dialect walks the module-level graph_nodes: point it at the mistake
_ref.graph_nodes = graph_nodes
detect_dialect = _ref.detect_dialect
