"""Mistake (blind round 5, wrong_expr_only_symbol): the batch is a symbol (s77); a size that is an expression of it
(2*s77) is a number the host computed for this example, read with int(). `x.flatten(0, 1)` of a 3 x 2 x 4 example
exports as view(x, [2*s77, 4]); this writes view(x, [6, 4]), which fails on every other batch.
Lesson (Step 2): ""The batch" is any size that is a SymInt, whatever it looks like: ... a size computed from a batch
as much as the bare symbol ... `2*s77` is symbolic and is the one written as -1"."""
from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('legalise_removes_aliases_and_reshapes', 'legalise_leaves_legal_graphs_alone',
             'lower_runs_each_npu_island_as_one_program', 'random_programs_lower_and_match_eager')


def _static_sizes(node):
    shape = node.meta["val"].shape
    if sum(not isinstance(s, int) for s in shape) > 1:
        return None
    return [s if isinstance(s, int) else -1 if s.node.expr.is_Symbol else int(s) for s in shape]


_ref._static_sizes = _static_sizes

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
