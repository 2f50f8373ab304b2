"""Mistake: legalise removes aliases and clones but leaves unsqueeze, squeeze and views sized by sym_size: the
NPU runs none of them, so they split the model into several programs."""

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('legalise_removes_aliases_and_reshapes', 'lower_runs_each_npu_island_as_one_program')


def legalise(gm):
    changed = 0
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and _ref._is_noop(node):
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
            changed += 1
    gm.recompile()
    return changed


_ref.legalise = legalise

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
