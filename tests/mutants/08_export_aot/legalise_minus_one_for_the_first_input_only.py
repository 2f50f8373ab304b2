"""Mistake (blind round 5, wrong_first_batch_symbol): the graph has one batch, the symbol of the first input's
dimension 0. A rewritten view's sizes say -1 for that symbol (bare or computed from it, 2*s77) and read every
other size with int(): the second input's batch becomes its example's (5), and `y.unsqueeze(1)` becomes
view(y, [5, 1, 2]), which fails on every other batch of y.
Lesson (Step 1 and Step 2): "Give dimension 0 of each input a `Dim` of its own name" / ""The batch" is any size
that is a SymInt, whatever it looks like: the batch of any input, not only the first's"."""
import torch

from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('legalise_removes_aliases_and_reshapes', 'legalise_leaves_legal_graphs_alone',
             'lower_runs_each_npu_island_as_one_program', 'random_programs_lower_and_match_eager')


def _first_batch(graph):
    for node in graph.nodes:
        value = node.meta.get("val") if node.op == "placeholder" else None
        if isinstance(value, torch.Tensor) and value.dim() and isinstance(value.shape[0], torch.SymInt):
            return value.shape[0].node.expr
    return None


def _static_sizes(node):
    shape = node.meta["val"].shape
    if sum(not isinstance(s, int) for s in shape) > 1:
        return None
    batch = _first_batch(node.graph)
    return [s if isinstance(s, int) else -1 if s.node.expr.free_symbols == {batch} else int(s) for s in shape]


_ref._static_sizes = _static_sizes

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
