"""Mistake (blind round 1, wrong_legalise_batch_is_dim0): the batch is always dimension 0, so a rewritten view's
sizes are -1 then the other sizes as ints. h.unsqueeze(0) is 1 x batch x 8: this writes view(h, [-1, 3, 8]), which
fails on every batch but the example's."""
from checker.kit import load_reference

_ref = load_reference("08_export_aot", "aot.py")
KILLED_BY = ('legalise_removes_aliases_and_reshapes', 'legalise_leaves_legal_graphs_alone',
             'random_programs_lower_and_match_eager')


def _static_sizes(node):
    shape = node.meta["val"].shape
    if sum(not isinstance(s, int) for s in shape) > 1:
        return None
    return [-1] + [int(s) for s in shape[1:]]


_ref._static_sizes = _static_sizes

npu_decomposition_table, export_for_npu, legalise, is_npu_node = (
    _ref.npu_decomposition_table, _ref.export_for_npu, _ref.legalise, _ref.is_npu_node)
NpuSupport, delegate_to_npu, lower = _ref.NpuSupport, _ref.delegate_to_npu, _ref.lower
