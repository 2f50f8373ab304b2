"""Mistake: legalise writes the views' sizes from the example (int() of each size): the batch is fixed to 3 in a
graph exported for any batch."""
import torch
from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('legalise_leaves_legal_graphs_alone', 'legalise_removes_aliases_and_reshapes',
    'lower_runs_each_npu_island_as_one_program')


aten = torch.ops.aten


def legalise(gm):
    changed = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        if _ref._is_noop(node):
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
            changed += 1
        elif node.target in _ref.RESHAPES:
            sizes = [int(s) for s in node.meta["val"].shape]
            if node.target is aten.view.default and list(node.args[1]) == sizes:
                continue
            with gm.graph.inserting_before(node):
                view = gm.graph.call_function(aten.view.default, (node.args[0], sizes))
            view.meta = dict(node.meta)
            node.replace_all_uses_with(view)
            gm.graph.erase_node(node)
            changed += 1
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return changed


_ref.legalise = legalise

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
